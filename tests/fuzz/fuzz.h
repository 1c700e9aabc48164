/*
 * fuzz.h - what the fuzz harnesses of tests/fuzz share.
 *
 * Each fuzz-NAME.c defines LLVMFuzzerTestOneInput, which hands the bytes to
 * one of kctl's or evalpod's input readers and frees everything it got.
 * The same file links two ways: with libFuzzer (-DKCTL_FUZZ=ON, clang) into
 * fuzz-NAME, and with replay.c into replay-NAME, which the normal suite
 * runs over tests/fuzz/corpus/NAME/ so every corpus entry stays a
 * regression test even where there is no clang.
 */
#ifndef KCTL_FUZZ_H
#define KCTL_FUZZ_H

#include <stddef.h>
#include <stdint.h>

/* libFuzzer's entry point: always returns 0. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * The harness's private folder (made on first use under $TMPDIR or /tmp,
 * removed with its files at exit).  Never fails: a folder that cannot be
 * made aborts, since no input could be tried without it.
 */
const char *fuzz_dir(void);

/*
 * Writes data to fuzz_dir()/name (replacing it) and returns the path,
 * malloc'd (caller frees).  Aborts when the write fails.
 */
char *fuzz_write(const char *name, const void *data, size_t len);

#endif
