// ClusterLink: looprd's side of the workers (issue 28, docs/cluster.md). It
// keeps a NATS connection (retrying in the background while the server is
// away), publishes a lane's jobs to the JetStream work queue with the
// snapshot commit of their worktree, serves the git bundles workers ask for
// (only for jobs in flight), and accepts exactly one result per job: a
// duplicate (a stalled worker's, after redelivery) or a result from a worker
// that [cluster] admit does not list is ignored and logged.
//
// run() says "run it here" (RemoteReply::run_locally, with why) when NATS is
// unreachable, the worktree is not a git worktree, or — with
// on_queue_timeout = "local" — no worker started the job within
// queue_timeout_s; the caller then runs the job on its own runner.
//
// Threads: run(), cancel(), status_json() and workers_json() on the io
// thread. NATS callbacks and blocking calls (git, JetStream publishes) run
// on libnats' threads and the link's own pool, and hand what they learn to
// the io thread.
#pragma once

#include <asio/awaitable.hpp>
#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <asio/thread_pool.hpp>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>

#include "cluster/cluster_messages.hpp"
#include "cluster/nats_client.hpp"
#include "cluster/worktree_snapshot.hpp"
#include "config/settings.hpp"
#include "proto/runner_messages.hpp"

namespace loopr::cluster {

// What run() answers. When run_locally is false, `result` is the worker's
// result (or one made up here, with link_error saying why) and `worker`
// names who ran it.
struct RemoteReply {
  bool run_locally = false;
  std::string why_local;  // for the log and the call's events
  proto::JobResult result;
  std::optional<Error> link_error;
  std::string worker;
  std::uint64_t deliveries = 0;  // JetStream deliveries the job took (2+: redelivered)
  // Where the time went, in milliseconds (bench/cluster_bench.sh): making
  // the snapshot and queueing the job; from queued to a worker's first
  // "started" (with every worker busy, this includes the wait for one);
  // and from the last "started" to the result beyond the job's own run
  // time (the worker's checkout and any bundle, the result's way back).
  double snapshot_ms = 0;
  double pickup_ms = 0;
  double overhead_ms = 0;
  double prepare_ms = 0;  // the worker's own: bundle and checkout
};

class ClusterLink {
 public:
  using OutputSink = std::function<void(const proto::OutputChunk& chunk)>;

  // `state_folder`: a private folder of looprd's for snapshots' scratch files.
  ClusterLink(asio::io_context& io, config::ClusterSettings settings, std::string state_folder,
              OutputSink on_output);
  ~ClusterLink();
  ClusterLink(const ClusterLink&) = delete;
  ClusterLink& operator=(const ClusterLink&) = delete;

  // Starts connecting (in the background; never blocks).
  void start();
  // Stops: in-flight runs end as cancelled; the connection closes.
  void stop();

  // Whether [cluster] sends this lane's jobs to workers at all.
  bool routes(std::string_view lane) const;
  // `repo`: the repository the call is about, when the caller knows it.
  asio::awaitable<RemoteReply> run(proto::Job job, std::string lane, std::string repo);
  // Cancels a job in flight here; false if unknown.
  bool cancel(const std::string& job_id);

  bool connected() const { return connected_.load(); }
  const std::string& daemon_id() const { return daemon_id_; }
  // {configured, url, state: "connected"|"connecting"|"unreachable", last_error?,
  //  lanes, queued, in_flight, completed, fallbacks, duplicates_ignored,
  //  refused_results, workers: [...]}
  nlohmann::json status_json() const;
  // [{id, labels, lanes, slots, running: [...], seen_ms_ago}] of workers seen lately.
  nlohmann::json workers_json() const;

 private:
  struct Pending;

  void connect_loop();
  // The stream and this looprd's consumers, made where missing (again after
  // a reconnect: a restarted server may have lost them).
  Result<void> ensure_queue(NatsClient& client);
  Result<void> subscribe(NatsClient& client);
  // Until stop(): after each reconnect, ensure_queue() (retried every 2 s)
  // before the lanes go to workers again.
  void serve_reconnects(NatsClient& client);
  void on_progress(NatsMessage message);
  void on_result(NatsMessage message);
  void on_bundle_request(NatsMessage message);
  void on_presence(NatsMessage message);
  void settle(const std::shared_ptr<Pending>& pending);
  std::string unreachable_reason() const;
  bool admitted(const std::string& worker) const;

  asio::io_context& io_;
  config::ClusterSettings settings_;
  std::string state_folder_;
  OutputSink on_output_;
  std::string daemon_id_;
  std::string host_id_;
  asio::thread_pool pool_{2};
  // Bundles are written and sent here, one at a time, so a burst of them
  // never holds up snapshots and publishing.
  asio::thread_pool bundle_pool_{1};

  // The connection: made by the connect thread, then only read.
  std::shared_ptr<NatsClient> client_;
  mutable std::mutex client_mutex_;
  std::atomic<bool> connected_{false};
  std::string last_error_;  // guarded by client_mutex_
  std::thread connector_;
  std::mutex stop_mutex_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;
  bool reconnected_ = false;  // guarded by stop_mutex_: ensure_queue() again
  // Live while the link is: handlers posted to the io thread check it.
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);

  // io thread only.
  std::map<std::string, std::shared_ptr<Pending>> pending_;
  // Snapshots of jobs in flight, for bundle requests (any thread).
  mutable std::mutex snapshots_mutex_;
  struct HeldSnapshot {
    Snapshot snapshot;
    int bundles_sent = 0;  // at most one per delivery
  };
  std::map<std::string, HeldSnapshot> snapshots_;
  struct Seen {
    WorkerPresence presence;
    std::chrono::steady_clock::time_point at;
  };
  std::map<std::string, Seen> workers_;
  std::uint64_t completed_ = 0;
  std::uint64_t fallbacks_ = 0;
  std::uint64_t duplicates_ = 0;
  std::uint64_t refused_ = 0;
};

}  // namespace loopr::cluster
