// The worker: `loopr-runner --join NATS_URL ...` on a machine of its own
// (issue 28, docs/cluster.md). It pulls jobs from the JetStream consumers of
// its lanes and of every subset of its labels, fetches the job's commit from
// looprd as a git bundle when it lacks it, checks it out in a warm worktree
// (worker_repos), runs the job on its own sandboxed lane runner
// (runner_child), streams the output back, heartbeats the job with
// in-progress acknowledgements, publishes one result and acknowledges the
// message. It announces itself every 2 s on loopr.workers.ID.
//
// A job first delivered after its start-by time (looprd gave up on it) is
// acknowledged and dropped. A worker whose runner dies gives its job back
// (nak) and exits 1, for its supervisor to restart it.
#pragma once

#include <string>
#include <vector>

namespace loopr::cluster {

struct WorkerOptions {
  std::string nats_url;
  std::string creds_file;
  std::string tls_ca_file;
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string id;     // valid_id(); names the worker in every result
  std::string state;  // a folder of its own: repositories, worktrees
  std::vector<std::string> labels;
  std::vector<std::string> lanes = {"heavy"};
  unsigned slots = 1;
  std::string stream = "LOOPR_JOBS";  // [cluster] stream of the looprd it serves
  // The lane runner's command line, without --fd (runner_child adds it).
  std::vector<std::string> runner_argv;
};

// Runs until SIGTERM or SIGINT (exit 0: finished the jobs it held) or a
// failure: 2 for a usage or credentials error, 1 when its runner died.
int run_worker(const WorkerOptions& options);

}  // namespace loopr::cluster
