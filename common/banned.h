/*
 * banned.h - functions this project does not call.
 *
 * Force-included into every translation unit (see common/CMakeLists.txt).
 * The system headers that declare these functions are pulled in first so
 * their declarations are not rewritten; any later call in our code expands
 * to an undeclared identifier and fails to compile.  Use strlcpy/strlcat
 * (libbsd), snprintf, strtol/strtoll with end checks, strtok_r instead.
 */
#ifndef KCTL_BANNED_H
#define KCTL_BANNED_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BANNED(func) sorry_##func##_is_banned_in_this_project

#undef strcpy
#define strcpy(x, y) BANNED(strcpy)
#undef strcat
#define strcat(x, y) BANNED(strcat)
#undef strncpy
#define strncpy(x, y, n) BANNED(strncpy)
#undef sprintf
#define sprintf(...) BANNED(sprintf)
#undef vsprintf
#define vsprintf(...) BANNED(vsprintf)
#undef strtok
#define strtok(x, y) BANNED(strtok)
#undef atoi
#define atoi(x) BANNED(atoi)
#undef atol
#define atol(x) BANNED(atol)
#undef gets
#define gets(x) BANNED(gets)

#endif
