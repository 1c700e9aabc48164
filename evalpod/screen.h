/* screen.h - refusing dangerous constructs in candidate sources and build options (to be written). */
#ifndef EVALPOD_SCREEN_H
#define EVALPOD_SCREEN_H
#endif
