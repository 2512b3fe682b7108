#include <pthread.h>

#include <csignal>
#include <thread>

#include <halo/datasets/readers/staged_directory.hpp>
#include <halo/tools/halo/termination.hpp>

namespace halo::cli {

void end_by_signal_on_termination() {
  sigset_t set;
  sigemptyset(&set);
  for (const int s : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&set, s);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::thread([set] {
    int sig = 0;
    while (sigwait(&set, &sig) != 0) {
    }
    datasets::remove_staging_directories();
    // The default action, whatever handler a library installed meanwhile: the process ends
    // by `sig` as soon as it is unblocked here.
    std::signal(sig, SIG_DFL);
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    pthread_sigmask(SIG_UNBLOCK, &one, nullptr);
    std::raise(sig);
  }).detach();
}

}  // namespace halo::cli
