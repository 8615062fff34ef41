// Clang thread-safety annotations (https://clang.llvm.org/docs/ThreadSafetyAnalysis.html), as
// LevelDB's port/thread_annotations.h and Abseil define them. A clang build with
// -Wthread-safety checks at compile time that state marked GUARDED_BY(mu) is touched only with
// mu held, and that functions marked REQUIRES(mu) / EXCLUDES(mu) are called so. Other
// compilers see nothing. Use them with common/mutex.h, whose types carry the capability.
#pragma once

#if defined(__clang__)
#define WATTDB_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define WATTDB_THREAD_ANNOTATION(x)
#endif

#define CAPABILITY(x) WATTDB_THREAD_ANNOTATION(capability(x))
#define SCOPED_CAPABILITY WATTDB_THREAD_ANNOTATION(scoped_lockable)
#define GUARDED_BY(x) WATTDB_THREAD_ANNOTATION(guarded_by(x))
#define PT_GUARDED_BY(x) WATTDB_THREAD_ANNOTATION(pt_guarded_by(x))
#define ACQUIRED_BEFORE(...) WATTDB_THREAD_ANNOTATION(acquired_before(__VA_ARGS__))
#define ACQUIRED_AFTER(...) WATTDB_THREAD_ANNOTATION(acquired_after(__VA_ARGS__))
#define REQUIRES(...) WATTDB_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define REQUIRES_SHARED(...) WATTDB_THREAD_ANNOTATION(requires_shared_capability(__VA_ARGS__))
#define ACQUIRE(...) WATTDB_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define ACQUIRE_SHARED(...) WATTDB_THREAD_ANNOTATION(acquire_shared_capability(__VA_ARGS__))
#define RELEASE(...) WATTDB_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define RELEASE_SHARED(...) WATTDB_THREAD_ANNOTATION(release_shared_capability(__VA_ARGS__))
#define RELEASE_GENERIC(...) WATTDB_THREAD_ANNOTATION(release_generic_capability(__VA_ARGS__))
#define TRY_ACQUIRE(...) WATTDB_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
#define TRY_ACQUIRE_SHARED(...) WATTDB_THREAD_ANNOTATION(try_acquire_shared_capability(__VA_ARGS__))
#define EXCLUDES(...) WATTDB_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define ASSERT_CAPABILITY(x) WATTDB_THREAD_ANNOTATION(assert_capability(x))
#define ASSERT_SHARED_CAPABILITY(x) WATTDB_THREAD_ANNOTATION(assert_shared_capability(x))
#define RETURN_CAPABILITY(x) WATTDB_THREAD_ANNOTATION(lock_returned(x))
#define NO_THREAD_SAFETY_ANALYSIS WATTDB_THREAD_ANNOTATION(no_thread_safety_analysis)
