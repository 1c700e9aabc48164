/* world-map.c - (being split out) */
