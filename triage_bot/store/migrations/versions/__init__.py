"""One file per schema revision, oldest first: v0001 is the schema made by create_all before
migrations existed (the baseline), each later one a change to it."""
