/* sandbox.h - confining the worker processes that run candidate kernels (to be written). */
#ifndef EVALPOD_SANDBOX_H
#define EVALPOD_SANDBOX_H
#endif
