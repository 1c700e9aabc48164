/*
 * kpod.h - reading a Kubernetes Pod's status for kctl's diagnosis: which
 * shard it runs, and what is wrong with it, in the words a person would
 * look for (ImagePullBackOff, Unschedulable, OOMKilled, Evicted,
 * DeadlineExceeded, an exit status).
 */
#ifndef KCTL_KPOD_H
#define KCTL_KPOD_H

#include <jansson.h>
#include <stddef.h>
#include <time.h>

/*
 * The shard pod runs: its Indexed Job completion index, else its
 * kctl.dev/shard label; -1 when neither says.
 */
int kpod_shard(json_t *pod);

/* An RFC 3339 time ("2026-11-22T15:04:05Z") as UTC seconds; 0 when unreadable. */
time_t kpod_time(const char *rfc3339);

/*
 * What is wrong with pod, into why (size n; empty when nothing is): the
 * status reason (Evicted, DeadlineExceeded), a failed container's reason
 * and exit status, a waiting reason that will not pass by itself
 * (ImagePullBackOff, ErrImagePull, InvalidImageName, CreateContainer...),
 * or Unschedulable.  *stuck is set for the last two kinds: the pod stays
 * Pending until someone acts.
 */
void kpod_diagnose(json_t *pod, char *why, size_t n, int *stuck);

/*
 * The exit status of a Failed pod's evalpod container (the one named
 * "evalpod", else the first with a terminated state), or -1 when the pod
 * has not failed or no container says.
 */
int kpod_exit_status(json_t *pod);

#endif
