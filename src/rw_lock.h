// A reader-writer lock that prefers writers. glibc's default rwlock (behind
// std::shared_mutex) prefers readers, so slurmctld's RPC threads calling
// priority() back to back could starve our cycle thread indefinitely. Meets
// the SharedMutex requirements, so std::shared_lock / std::unique_lock work.
#pragma once

#include <pthread.h>

#include <system_error>

namespace gpufair {

class WriterPreferringRwLock {
 public:
  WriterPreferringRwLock() {
    pthread_rwlockattr_t attr;
    pthread_rwlockattr_init(&attr);
    pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    const int rc = pthread_rwlock_init(&lock_, &attr);
    pthread_rwlockattr_destroy(&attr);
    if (rc != 0) throw std::system_error(rc, std::generic_category(), "pthread_rwlock_init");
  }
  ~WriterPreferringRwLock() { pthread_rwlock_destroy(&lock_); }
  WriterPreferringRwLock(const WriterPreferringRwLock&) = delete;
  WriterPreferringRwLock& operator=(const WriterPreferringRwLock&) = delete;

  void lock() { check(pthread_rwlock_wrlock(&lock_)); }
  bool try_lock() { return pthread_rwlock_trywrlock(&lock_) == 0; }
  void unlock() { pthread_rwlock_unlock(&lock_); }
  void lock_shared() { check(pthread_rwlock_rdlock(&lock_)); }
  bool try_lock_shared() { return pthread_rwlock_tryrdlock(&lock_) == 0; }
  void unlock_shared() { pthread_rwlock_unlock(&lock_); }

 private:
  static void check(int rc) {
    if (rc != 0) throw std::system_error(rc, std::generic_category(), "pthread_rwlock");
  }
  pthread_rwlock_t lock_;
};

}  // namespace gpufair
