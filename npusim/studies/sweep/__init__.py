"""npusim sweep: a space of tilings (space) run as points (study), kept for --resume (store) and
reported (report)."""
