// DaemonLink: the TUI's connection to looprd, on threads of its own so the
// UI never waits on the socket.
//
// - The events thread owns one ControlClient: it connects (initialize),
//   subscribes to every event, reads a snapshot (loop.list, approval.list,
//   metrics.get), then forwards events as they arrive and reads metrics.get
//   every kMetricsEvery. When the connection fails it reports
//   `reconnecting` with the reason and tries again with back-off (100 ms
//   doubling to 2 s), then resubscribes and re-snapshots.
// - The calls thread owns a second ControlClient for the person's requests
//   (approve, deny, plan.*, loop.*; loop.get, loop.transcript, plan.get for
//   the panes), one at a time in order, each with a deadline; a broken
//   connection is reopened on the next request.
// - Both hand LinkMessages to the UI thread through one bounded inbox and
//   make wake_fd() (an eventfd) readable. When the inbox is full, events are
//   dropped and a fresh snapshot is read once the UI has caught up, so a
//   flood costs a redraw, never unbounded memory.
// Thread contract: send(), drain(), wake_fd() and stop() are for the UI
// thread; everything else is private to the link's threads.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "common/unique_fd.hpp"
#include "proto/control_messages.hpp"
#include "tui/daemon_state.hpp"
#include "tui/ui_state.hpp"

namespace loopr::tui {

struct LinkMessage {
  enum class Kind { link, snapshot, metrics, event, reply };
  Kind kind = Kind::event;
  // link
  LinkState link = LinkState::connecting;
  std::string detail;  // link: why it is reconnecting; reply: the error
  // snapshot
  Snapshot snapshot;
  // metrics (and snapshot): when it was read, on the steady clock
  nlohmann::json metrics;
  std::int64_t steady_ms = 0;
  // event
  proto::Event event;
  // reply
  Command command;
  bool ok = false;
  nlohmann::json result;
};

class DaemonLink {
 public:
  static constexpr std::size_t kMaxInbox = 20'000;
  static constexpr std::size_t kMaxOutbox = 256;
  static constexpr std::chrono::milliseconds kMetricsEvery{2000};
  static constexpr std::size_t kMaxTranscriptSteps = 5000;

  explicit DaemonLink(std::string socket_path);
  ~DaemonLink();
  DaemonLink(const DaemonLink&) = delete;
  DaemonLink& operator=(const DaemonLink&) = delete;

  // Starts both threads.
  void start();
  // Stops and joins them (a call in flight finishes within its deadline).
  void stop();

  // Queues a request; false (and nothing queued) when kMaxOutbox wait already.
  bool send(Command command);
  // Everything that arrived, oldest first; clears wake_fd().
  std::vector<LinkMessage> drain();
  // Readable while messages wait (EFD_CLOEXEC | EFD_NONBLOCK; owned here).
  int wake_fd() const { return wake_.get(); }

 private:
  void events_main();
  void calls_main();
  // false when the inbox is full (the message is dropped).
  bool post(LinkMessage message);
  // Waits up to `wait` unless stopping; true when stopping.
  bool sleep_or_stop(std::chrono::milliseconds wait);

  std::string socket_path_;
  UniqueFd wake_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> overflowed_{false};

  std::mutex inbox_mutex_;
  std::deque<LinkMessage> inbox_;

  std::mutex outbox_mutex_;
  std::condition_variable outbox_ready_;
  std::deque<Command> outbox_;

  std::mutex sleep_mutex_;
  std::condition_variable sleep_cv_;

  std::thread events_thread_;
  std::thread calls_thread_;
};

}  // namespace loopr::tui
