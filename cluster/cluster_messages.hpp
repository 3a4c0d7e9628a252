// What looprd and its workers say to each other through NATS (issue 28,
// docs/cluster.md). Pure codecs and subject names: no I/O, never throws.
//
// Subjects (PREFIX is "loopr"; DAEMON is looprd's id, WORKER a worker's):
//   PREFIX.jobs.LANE.LABELS     JetStream work queue: one ClusterJob each.
//                               LABELS is the job's required labels, sorted
//                               and joined by '+', or "any".
//   PREFIX.progress.DAEMON      worker -> looprd: Progress (started, output)
//   PREFIX.results.DAEMON       worker -> looprd: ClusterResult
//   PREFIX.bundles.DAEMON       worker -> looprd request, chunked reply:
//                               the git bundle of a job's commit
//   PREFIX.cancel.DAEMON        looprd -> workers: a job to stop
//   PREFIX.workers.WORKER       worker -> all: WorkerPresence, every few s
// Each payload is one JSON object, except a bundle chunk (see below).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"
#include "proto/runner_messages.hpp"

namespace loopr::cluster {

inline constexpr std::string_view kSubjectPrefix = "loopr";
inline constexpr std::uint32_t kClusterProtocolVersion = 1;
// A worker subscribes to every subset of its labels, so it holds few.
inline constexpr std::size_t kMaxWorkerLabels = 6;
// NATS' default max_payload is 1 MiB: a bundle travels in chunks of this.
inline constexpr std::size_t kBundleChunkBytes = 512 * 1024;

// The required labels as a subject token: sorted, unique, joined by '+';
// "any" when there are none.
std::string label_key(std::vector<std::string> labels);
std::string jobs_subject(std::string_view lane, const std::vector<std::string>& labels);
// The JetStream durable consumer for one jobs subject, shared by every
// worker that may take its jobs.
std::string consumer_name(std::string_view lane, const std::vector<std::string>& labels);
// Every subset of `labels` (the empty one included): the label sets of the
// jobs a worker with these labels may take.
std::vector<std::vector<std::string>> label_subsets(const std::vector<std::string>& labels);
std::string daemon_subject(std::string_view kind, std::string_view daemon_id);
std::string worker_subject(std::string_view worker_id);
// Inbox prefixes (docs/cluster.md's permissions): each worker's replies go
// to _INBOX.<id>.…, looprd's to _INBOX.looprd.…
inline constexpr std::string_view kLooprdInboxPrefix = "_INBOX.looprd";
std::string worker_inbox_prefix(std::string_view worker_id);

// A job on the queue. `job` is the runner protocol's, with worktree and cwd
// left empty: the worker puts its own worktree there, and `cwd` below
// beneath it.
struct ClusterJob {
  std::string daemon;  // looprd's id: where progress and the result go
  std::string lane;
  std::vector<std::string> labels;  // required
  std::string repo_key;             // names the repository on every worker
  std::string repo_name;            // for people: the folder's name
  std::string commit;               // the exact tree to run in (40 hex)
  std::string cwd;                  // relative to the worktree; "" = its top
  // Random per job: a worker's progress and result echo it, so a result
  // cannot be made up by a party that never saw the job.
  std::string nonce;
  proto::Job job;
};

// worker -> looprd while a job runs. kind "started" (delivery counts the
// JetStream deliveries, 1 first) or "output" (chunk set).
struct Progress {
  std::string kind;
  std::string job_id;
  std::string worker;
  std::uint64_t delivery = 1;
  std::string nonce;  // the job's
  std::optional<proto::OutputChunk> chunk;
};

struct ClusterResult {
  std::string worker;
  std::uint64_t delivery = 1;
  std::string nonce;  // the job's
  // The worker's own time to make the job's tree ready (bundle, checkout).
  double prepare_ms = 0;
  proto::JobResult result;
};

struct BundleRequest {
  std::string job_id;
  std::string repo_key;
  std::string commit;
  std::string worker;
  std::vector<std::string> have;  // commits the worker holds of this repository
};

// One chunk of a bundle reply: a JSON header line, '\n', then raw bytes.
// {"seq":N,"last":B} or {"error":"..."} (then no bytes follow).
struct BundleChunk {
  std::uint64_t seq = 0;
  bool last = false;
  std::optional<std::string> error;
  std::string bytes;
};

struct RunningJob {
  std::string job_id;
  std::string daemon;
  std::string tool;
  std::uint64_t started_unix_ms = 0;
};

struct WorkerPresence {
  std::string id;
  std::vector<std::string> labels;
  std::vector<std::string> lanes;
  std::uint32_t slots = 1;
  std::vector<RunningJob> running;
  std::uint64_t sent_unix_ms = 0;
  std::uint32_t version = kClusterProtocolVersion;
  bool leaving = false;  // the worker is stopping
};

std::string encode(const ClusterJob& m);
std::string encode(const Progress& m);
std::string encode(const ClusterResult& m);
std::string encode(const BundleRequest& m);
std::string encode(const BundleChunk& m);
std::string encode(const WorkerPresence& m);

// Each refuses (errc::protocol) what is not the message it names: not JSON,
// a missing or mistyped field, an id or label that could not be a subject
// token, a commit that is not 40 hex digits.
Result<ClusterJob> parse_cluster_job(std::string_view payload);
Result<Progress> parse_progress(std::string_view payload);
Result<ClusterResult> parse_cluster_result(std::string_view payload);
Result<BundleRequest> parse_bundle_request(std::string_view payload);
Result<BundleChunk> parse_bundle_chunk(std::string_view payload);
Result<WorkerPresence> parse_worker_presence(std::string_view payload);

// An id a subject may carry (a worker's or looprd's): 1-64 of [A-Za-z0-9_-].
bool valid_id(std::string_view id);
// A worker's id: valid_id(), and not one of the names looprd gives calls
// that ran on no worker ("local", "unknown"), nor "looprd" (its inboxes).
bool valid_worker_id(std::string_view id);
bool valid_commit(std::string_view commit);

}  // namespace loopr::cluster
