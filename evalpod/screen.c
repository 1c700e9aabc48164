#include "screen.h"
