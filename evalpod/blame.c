/* blame.c - (being split out) */
