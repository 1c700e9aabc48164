/* screen-lex.c - (being split out) */
