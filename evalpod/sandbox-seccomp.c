/* sandbox-seccomp.c - (being split out) */
