/* sandbox-landlock.c - (being split out) */
