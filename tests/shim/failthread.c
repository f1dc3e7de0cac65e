/*
 * failthread.c - an LD_PRELOAD shim for tests/exitcodes.bats: every
 * pthread_create(3) fails with EAGAIN, as when a process has reached its
 * limit of threads, so that what run does without its renewal thread can
 * be tested.
 */
#include <errno.h>
#include <pthread.h>

int pthread_create(pthread_t *th, const pthread_attr_t *attr,
		   void *(*fn)(void *), void *arg)
{
	(void)th;
	(void)attr;
	(void)fn;
	(void)arg;
	return EAGAIN;
}
