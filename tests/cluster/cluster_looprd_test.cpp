// Workers through NATS JetStream end to end (issue 28, docs/cluster.md): a
// real nats-server with JetStream on loopback, the real looprd, and real
// workers (loopr-runner --join) as separate processes with state folders of
// their own — as root, each in a network namespace that reaches only the
// NATS port. Each test names the behaviour it proves and checks it through
// tool.call replies, metrics.get's cluster part, loop.get and the logs.
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <future>
#include <thread>

#include "cluster/cluster_messages.hpp"
#include "cluster/nats_client.hpp"
#include "tests/cluster/cluster_fixture.hpp"
#include "tests/daemon/daemon_harness.hpp"
#include "tests/daemon/loop_fixture.hpp"

namespace loopr::test {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t count = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
    ++count;
  return count;
}

class ClusterTest : public ::testing::Test {
 protected:
  // [cluster] for this test's server, with a short acknowledgement deadline
  // so redeliveries happen within a test.
  std::string cluster_toml(const std::string& extra = {}) const {
    return "[commands]\nvalidate = \"sh v.sh\"\n[cluster]\nnats_url = \"" + nats_->url() +
           "\"\nack_wait_s = 2\n" +
           (extra.find("queue_timeout_s") == std::string::npos ? "queue_timeout_s = 20\n" : "") +
           extra;
  }

  void start_nats(const std::string& config = {}) {
    nats_ = std::make_unique<NatsServer>(tree_, config);
    nats_->start();
  }

  // looprd with [cluster], the sample repository as its worktree, and
  // `validate` = `sh v.sh` printing `script`.
  void start_looprd(const std::string& extra_cluster = {}, const std::string& script = {}) {
    DaemonOptions options;
    options.extra_toml = cluster_toml(extra_cluster);
    daemon_ = std::make_unique<DaemonHarness>(options);
    repo_ = make_sample_repo(daemon_->worktree());
    write_script(script.empty() ? "echo \"cwd=$(pwd)\"; cat answer.txt" : script);
    daemon_->start();
  }

  // v.sh in the worktree, not committed: a worker must see it all the same.
  void write_script(const std::string& script) const {
    std::ofstream(daemon_->worktree() + "/v.sh") << script << "\n";
  }

  json cluster() const { return daemon_->call("metrics.get").value("cluster", json()); }

  bool connected() const { return cluster().value("state", "") == "connected"; }

  bool sees(const std::string& worker_id) const {
    for (const json& w : cluster().value("workers", json::array()))
      if (w.value("id", "") == worker_id) return true;
    return false;
  }

  // The worker running `tool` now, or "" (and the job's id in `job_id`).
  std::string running(const std::string& tool, std::string* job_id = nullptr) const {
    for (const json& w : cluster().value("workers", json::array()))
      for (const json& job : w.value("running", json::array()))
        if (job.value("tool", "") == tool) {
          if (job_id != nullptr) *job_id = job.value("job_id", "");
          return w.value("id", "");
        }
    return "";
  }

  Worker& add_worker(WorkerSpec spec) {
    workers_.push_back(std::make_unique<Worker>(tree_, *nats_, std::move(spec)));
    Worker& worker = *workers_.back();
    EXPECT_TRUE(eventually([&] { return sees(worker.id()); }))
        << "looprd never saw worker " << worker.id() << ":\n"
        << worker.log();
    return worker;
  }

  Worker* worker_named(const std::string& id) {
    for (auto& w : workers_)
      if (w->id() == id) return w.get();
    return nullptr;
  }

  std::string worker_logs() const {
    std::string out;
    for (const auto& w : workers_)
      out += "--- worker " + w->id() + ":\n" + w->log();
    return out;
  }

  TempTree tree_;
  std::unique_ptr<NatsServer> nats_;
  std::unique_ptr<DaemonHarness> daemon_;
  SampleRepo repo_;
  std::vector<std::unique_ptr<Worker>> workers_;
};

TEST_F(ClusterTest, AValidationRunsOnAWorkerInTheWorktreeAsItIsAndSaysWhichWorker) {
  start_nats();
  start_looprd();
  ASSERT_TRUE(eventually([&] { return connected(); })) << daemon_->log();
  Worker& w1 = add_worker({"w1"});
  // Not committed: the worker runs the worktree as it is.
  std::ofstream(daemon_->worktree() + "/answer.txt") << "43\n";

  const json reply = daemon_->tool("validate", json::object());
  ASSERT_EQ(reply.value("ok", false), true) << reply.dump(2) << worker_logs();
  EXPECT_EQ(reply["worker"], "w1");
  const std::string out = reply["output"].value("stdout", "");
  EXPECT_NE(out.find("43"), std::string::npos) << out;
  // In the worker's own checkout, not looprd's worktree.
  EXPECT_NE(out.find("cwd=" + w1.state() + "/work/"), std::string::npos) << out;
  EXPECT_EQ(out.find(daemon_->worktree()), std::string::npos) << out;
  EXPECT_EQ(w1.isolated(), ::geteuid() == 0);

  // The same tree again: the worker holds its commit, so no second bundle.
  const json again = daemon_->tool("validate", json::object());
  EXPECT_EQ(again["worker"], "w1");
  EXPECT_EQ(count_of(daemon_->log(), "sent worker w1 a bundle"), 1u) << daemon_->log();
  // A change makes a new commit, sent as a bundle against what w1 holds.
  std::ofstream(daemon_->worktree() + "/answer.txt") << "44\n";
  const json changed = daemon_->tool("validate", json::object());
  EXPECT_NE(changed["output"].value("stdout", "").find("44"), std::string::npos);
  EXPECT_EQ(count_of(daemon_->log(), "sent worker w1 a bundle"), 2u);

  // The looprd side counts it, and a lane this link does not route stays here.
  const json status = cluster();
  EXPECT_EQ(status["completed"], 3);
  EXPECT_EQ(status["fallbacks"], 0);
  const json read = daemon_->tool("read_file", {{"path", "answer.txt"}});
  EXPECT_EQ(read["worker"], "local");
  // The worker's changes never come back: looprd's worktree is as it was.
  EXPECT_EQ(file_text(daemon_->worktree() + "/answer.txt"), "44\n");
}

TEST_F(ClusterTest, AWorkersOutputStreamsWhileItRunsAndTheFinishedEventNamesIt) {
  start_nats();
  start_looprd({}, "echo first-line; sleep 2; echo second-line");
  ASSERT_TRUE(eventually([&] { return connected(); })) << daemon_->log();
  add_worker({"w1"});
  EventLog events(*daemon_, {"tool.output", "tool.finished"});
  auto call =
      std::async(std::launch::async, [&] { return daemon_->tool("validate", json::object()); });
  const auto first = events.wait_for([](const proto::Event& e) {
    return e.event == "tool.output" &&
           e.data.value("data", "").find("first-line") != std::string::npos;
  });
  ASSERT_TRUE(first.has_value()) << worker_logs();
  const auto finished =
      events.wait_for([](const proto::Event& e) { return e.event == "tool.finished"; }, 30s);
  ASSERT_TRUE(finished.has_value());
  // The first line came while the job ran, before it finished.
  EXPECT_LT(*first, *finished);
  const json& done = events.events()[*finished].data;
  EXPECT_EQ(done["worker"], "w1") << done.dump();
  EXPECT_EQ(done["dispatch"]["deliveries"], 1) << done.dump();
  EXPECT_TRUE(done["dispatch"].contains("pickup_ms")) << done.dump();
  EXPECT_EQ(call.get()["worker"], "w1");
}

TEST_F(ClusterTest, LabelsRouteJobsToTheWorkersThatHaveThem) {
  start_nats();
  start_looprd("require_labels = [\"gpu\"]\n");
  ASSERT_TRUE(eventually([&] { return connected(); })) << daemon_->log();
  add_worker({"plain"});
  add_worker({"gpu-box", {"gpu", "arch=x86"}});
  for (int i = 0; i < 3; ++i) {
    const json reply = daemon_->tool("validate", json::object());
    EXPECT_EQ(reply["worker"], "gpu-box") << reply.dump(2);
  }
  const json workers = cluster()["workers"];
  bool listed = false;
  for (const json& w : workers)
    if (w["id"] == "gpu-box")
      listed = w["labels"] == json({"arch=x86", "gpu"}) || w["labels"] == json({"gpu", "arch=x86"});
  EXPECT_TRUE(listed) << workers.dump(2);
}

TEST_F(ClusterTest, AWorkerKilledMidJobHasItsJobRedeliveredAndFinishedOnce) {
  start_nats();
  start_looprd({}, "sleep 3; echo finished");
  ASSERT_TRUE(eventually([&] { return connected(); })) << daemon_->log();
  add_worker({"a"});
  add_worker({"b"});
  auto call =
      std::async(std::launch::async, [&] { return daemon_->tool("validate", json::object()); });
  std::string first;
  ASSERT_TRUE(eventually([&] { return !(first = running("validate")).empty(); }, 20s))
      << worker_logs();
  worker_named(first)->process().signal(SIGKILL);
  const json reply = call.get();
  const std::string other = first == "a" ? "b" : "a";
  ASSERT_EQ(reply.value("ok", false), true) << reply.dump(2) << worker_logs();
  EXPECT_EQ(reply["worker"], other);
  EXPECT_NE(reply["output"].value("stdout", "").find("finished"), std::string::npos);
  const json status = cluster();
  EXPECT_EQ(status["completed"], 1);
  EXPECT_EQ(status["duplicates_ignored"], 0);
  EXPECT_NE(daemon_->log().find("redelivered to worker " + other), std::string::npos)
      << daemon_->log();
}

TEST_F(ClusterTest, ALiveWorkerKeepsItsJobPastManyAcknowledgementDeadlines) {
  start_nats();
  start_looprd({}, "sleep 7; echo finished");  // three and a half times ack_wait_s
  ASSERT_TRUE(eventually([&] { return connected(); })) << daemon_->log();
  add_worker({"a"});
  add_worker({"b"});
  const json reply = daemon_->tool("validate", json::object());
  ASSERT_EQ(reply.value("ok", false), true) << reply.dump(2) << worker_logs();
  // Its in-progress heartbeats held it: the other worker never saw the job.
  const std::string other = reply["worker"] == "a" ? "b" : "a";
  EXPECT_EQ(worker_named(other)->log().find("job c-"), std::string::npos) << worker_logs();
  EXPECT_EQ(worker_logs().find("delivered again"), std::string::npos) << worker_logs();
  EXPECT_EQ(cluster()["duplicates_ignored"], 0);
}

TEST_F(ClusterTest, AStalledWorkerLosesItsJobAndItsLateResultIsIgnored) {
  start_nats();
  start_looprd({}, "sleep 3; echo finished");
  ASSERT_TRUE(eventually([&] { return connected(); })) << daemon_->log();
  add_worker({"a"});
  add_worker({"b"});
  auto call =
      std::async(std::launch::async, [&] { return daemon_->tool("validate", json::object()); });
  std::string first;
  ASSERT_TRUE(eventually([&] { return !(first = running("validate")).empty(); }, 20s));
  Worker& stalled = *worker_named(first);
  stalled.process().signal(SIGSTOP);
  const json reply = call.get();
  const std::string other = first == "a" ? "b" : "a";
  ASSERT_EQ(reply.value("ok", false), true) << reply.dump(2) << worker_logs();
  EXPECT_EQ(reply["worker"], other);
  // Woken, it finishes the job it held and publishes: one result per job.
  stalled.process().signal(SIGCONT);
  EXPECT_TRUE(eventually([&] { return cluster().value("duplicates_ignored", 0) == 1; }, 30s))
      << cluster().dump(2) << worker_logs();
  EXPECT_NE(daemon_->log().find("from worker " + first), std::string::npos);
  EXPECT_EQ(cluster()["completed"], 1);
}

TEST_F(ClusterTest, AForgedOrRepeatedResultIsNotTakenForTheJobs) {
  start_nats();
  start_looprd("admit = [\"w1\"]\n", "sleep 4; echo real");
  ASSERT_TRUE(eventually([&] { return connected(); })) << daemon_->log();
  add_worker({"w1"});
  const std::string daemon_id = cluster()["daemon_id"];
  auto call =
      std::async(std::launch::async, [&] { return daemon_->tool("validate", json::object()); });
  std::string job_id;
  ASSERT_TRUE(eventually([&] { return !running("validate", &job_id).empty(); }, 20s));
  ASSERT_FALSE(job_id.empty());
  // Another NATS client claims to be a worker that admit does not list.
  cluster::NatsSettings settings;
  settings.url = nats_->url();
  auto client = cluster::NatsClient::connect(settings);
  ASSERT_TRUE(client) << client.error().message;
  cluster::ClusterResult forged;
  forged.worker = "mallory";
  forged.result.job_id = job_id;
  forged.result.status = proto::JobStatus::success;
  forged.result.exit_code = 0;
  forged.result.output = R"({"exit_code":0,"stdout":"forged","stderr":"","output":"forged"})";
  ASSERT_TRUE((*client)->publish(cluster::daemon_subject("results", daemon_id), encode(forged)));
  // The admitted worker's id, but without the job's nonce: it never saw the job.
  forged.worker = "w1";
  ASSERT_TRUE((*client)->publish(cluster::daemon_subject("results", daemon_id), encode(forged)));
  const json reply = call.get();
  EXPECT_EQ(reply["worker"], "w1");
  EXPECT_NE(reply["output"].value("stdout", "").find("real"), std::string::npos) << reply.dump(2);
  EXPECT_EQ(cluster()["refused_results"], 2);
  // The same job's result again, from the admitted worker's id: one per job.
  ASSERT_TRUE((*client)->publish(cluster::daemon_subject("results", daemon_id), encode(forged)));
  EXPECT_TRUE(eventually([&] { return cluster().value("duplicates_ignored", 0) == 1; }, 10s));
  // And garbage on the subject is refused without harm.
  ASSERT_TRUE((*client)->publish(cluster::daemon_subject("results", daemon_id), "{not json"));
  EXPECT_EQ(daemon_->tool("validate", json::object())["worker"], "w1");
}

TEST_F(ClusterTest, ACancelledCallStopsItsJobOnTheWorker) {
  start_nats();
  start_looprd({}, "echo started; sleep 30; echo never");
  ASSERT_TRUE(eventually([&] { return connected(); })) << daemon_->log();
  add_worker({"w1"});
  auto call =
      std::async(std::launch::async, [&] { return daemon_->tool("validate", json::object()); });
  std::string call_id;
  ASSERT_TRUE(eventually([&] { return !running("validate", &call_id).empty(); }, 20s));
  const json cancelled = daemon_->call("tool.cancel", {{"call_id", call_id}});
  EXPECT_EQ(cancelled["cancelled"], true) << cancelled.dump();
  const json reply = call.get();
  EXPECT_EQ(reply["status"], "cancelled") << reply.dump(2);
  // The worker stopped the job: it is free long before the 30 s sleep ends.
  EXPECT_TRUE(eventually([&] { return running("validate").empty(); }, 10s)) << worker_logs();
  EXPECT_EQ(daemon_->tool("read_file", {{"path", "v.sh"}})["ok"], true);
}

TEST_F(ClusterTest, WithNatsGoneTheLaneRunsHereAndSaysSoThenWorkersTakeOverAgain) {
  start_nats();
  start_looprd({}, "echo ok");
  ASSERT_TRUE(eventually([&] { return connected(); })) << daemon_->log();
  add_worker({"w1"});
  EXPECT_EQ(daemon_->tool("validate", json::object())["worker"], "w1");

  nats_->stop();
  ASSERT_TRUE(eventually([&] { return !connected(); }, 20s));
  const json local = daemon_->tool("validate", json::object());
  EXPECT_EQ(local.value("ok", false), true) << local.dump(2);
  EXPECT_EQ(local["worker"], "local");
  const json down = cluster();
  EXPECT_NE(down["state"], "connected");
  EXPECT_GE(down["fallbacks"].get<int>(), 1);
  EXPECT_NE(daemon_->log().find("run on this machine"), std::string::npos);

  nats_->start();  // the same port and store
  ASSERT_TRUE(eventually([&] { return connected() && sees("w1"); }, 60s))
      << cluster().dump(2) << daemon_->log() << worker_logs();
  EXPECT_EQ(daemon_->tool("validate", json::object())["worker"], "w1") << worker_logs();
}

TEST_F(ClusterTest, AJobNoWorkerTakesRunsHereOrFailsAsConfigured) {
  start_nats();
  start_looprd("queue_timeout_s = 1\n", "echo ok");
  ASSERT_TRUE(eventually([&] { return connected(); })) << daemon_->log();
  const json reply = daemon_->tool("validate", json::object());
  EXPECT_EQ(reply.value("ok", false), true) << reply.dump(2);
  EXPECT_EQ(reply["worker"], "local");
  EXPECT_EQ(cluster()["fallbacks"], 1);
  // The job left the queue: a worker that starts now gets nothing of it.
  Worker& late = add_worker({"late"});
  std::this_thread::sleep_for(1500ms);
  EXPECT_EQ(late.log().find("job "), std::string::npos) << late.log();
}

TEST_F(ClusterTest, AJobNoWorkerTakesFailsWhenOnQueueTimeoutSaysFail) {
  start_nats();
  start_looprd("queue_timeout_s = 1\non_queue_timeout = \"fail\"\n", "echo ok");
  ASSERT_TRUE(eventually([&] { return connected(); })) << daemon_->log();
  const json reply = daemon_->tool("validate", json::object());
  EXPECT_EQ(reply.value("ok", true), false) << reply.dump(2);
  EXPECT_EQ(reply["error"]["code"], "timeout");
  EXPECT_NE(reply["error"]["message"].get<std::string>().find("queue_timeout_s"),
            std::string::npos);
}

// nkey users: loopr-runner --new-nkey makes them, nats-server checks them.
TEST_F(ClusterTest, WorkersAuthenticateWithTheirOwnKeysAndABadKeyIsRefusedClearly) {
  tree_.mkdir("keys");
  auto make_key = [&](const std::string& name) {
    Child maker({bin_path("loopr-runner"), "--new-nkey", tree_.path("keys/" + name)},
                tree_.path("keys/" + name + ".pub"));
    EXPECT_EQ(maker.wait_exit(10s), 0);
    std::string key = tree_.read("keys/" + name + ".pub");
    while (!key.empty() && key.back() == '\n')
      key.pop_back();
    EXPECT_EQ(key.size(), 56u) << key;
    EXPECT_EQ(key[0], 'U') << key;
    return key;
  };
  const std::string looprd_key = make_key("looprd.seed");
  const std::string worker_key = make_key("w1.seed");
  make_key("stranger.seed");  // not in the server's configuration
  // The permissions docs/cluster.md gives each user, and no more.
  start_nats(
      "authorization { users = [\n"
      "  { nkey: \"" +
      looprd_key +
      "\", permissions: {\n"
      "      publish: [\"loopr.jobs.>\", \"loopr.cancel.>\", \"_INBOX.>\",\n"
      "                \"$JS.API.STREAM.CREATE.LOOPR_JOBS\", \"$JS.API.STREAM.INFO.LOOPR_JOBS\",\n"
      "                \"$JS.API.STREAM.MSG.DELETE.LOOPR_JOBS\",\n"
      "                \"$JS.API.CONSUMER.DURABLE.CREATE.LOOPR_JOBS.>\",\n"
      "                \"$JS.API.CONSUMER.CREATE.LOOPR_JOBS.>\"]\n"
      "      subscribe: [\"loopr.progress.>\", \"loopr.results.>\", \"loopr.bundles.>\",\n"
      "                  \"loopr.workers.>\", \"_INBOX.looprd.>\"] } }\n"
      "  { nkey: \"" +
      worker_key +
      "\", permissions: {\n"
      "      publish: [\"loopr.progress.>\", \"loopr.results.>\", \"loopr.bundles.>\",\n"
      "                \"loopr.workers.w1\", \"$JS.API.CONSUMER.MSG.NEXT.LOOPR_JOBS.>\",\n"
      "                \"$JS.API.CONSUMER.INFO.LOOPR_JOBS.>\", \"$JS.ACK.LOOPR_JOBS.>\"]\n"
      "      subscribe: [\"loopr.cancel.>\", \"_INBOX.w1.>\"] } }\n"
      "] }\n");
  start_looprd("creds_file = \"" + tree_.path("keys/looprd.seed") + "\"\n", "echo ok");
  ASSERT_TRUE(eventually([&] { return connected(); })) << daemon_->log();
  tree_.mkdir("w1-keys");
  std::filesystem::copy_file(tree_.path("keys/w1.seed"), tree_.path("w1-keys/w1.seed"));
  add_worker({"w1", {}, tree_.path("w1-keys/w1.seed")});
  // Through those permissions: a job queued, a bundle asked for and sent, a
  // result, and the queue's acknowledgement.
  const json reply = daemon_->tool("validate", json::object());
  EXPECT_EQ(reply["worker"], "w1") << reply.dump(2) << worker_logs() << daemon_->log();
  EXPECT_EQ(reply.value("ok", false), true);
  EXPECT_EQ(daemon_->log().find("Permissions Violation"), std::string::npos) << daemon_->log();
  EXPECT_EQ(worker_logs().find("Permissions Violation"), std::string::npos) << worker_logs();
  const std::string server_log = tree_.read("nats/server.log");
  EXPECT_EQ(server_log.find("Violation"), std::string::npos) << server_log;

  tree_.mkdir("stranger-keys");
  std::filesystem::copy_file(tree_.path("keys/stranger.seed"),
                             tree_.path("stranger-keys/stranger.seed"));
  workers_.push_back(std::make_unique<Worker>(
      tree_, *nats_, WorkerSpec{"stranger", {}, tree_.path("stranger-keys/stranger.seed")}));
  Worker& stranger = *workers_.back();
  EXPECT_EQ(stranger.process().wait_exit(30s), 2) << stranger.log();
  EXPECT_NE(stranger.log().find("refused loopr's credentials"), std::string::npos)
      << stranger.log();
}

TEST_F(ClusterTest, ALooprdWithoutCredentialsTheServerAcceptsRunsItsLanesHereAndSaysWhy) {
  tree_.mkdir("keys");
  Child maker({bin_path("loopr-runner"), "--new-nkey", tree_.path("keys/a.seed")},
              tree_.path("keys/a.pub"));
  ASSERT_EQ(maker.wait_exit(10s), 0);
  std::string key = tree_.read("keys/a.pub");
  key.pop_back();
  start_nats("authorization { users = [ {nkey: \"" + key + "\"} ] }\n");
  start_looprd({}, "echo ok");  // no creds_file
  ASSERT_TRUE(eventually([&] { return cluster().contains("last_error"); }, 20s))
      << cluster().dump(2);
  EXPECT_NE(cluster()["state"], "connected");
  EXPECT_NE(daemon_->log().find("creds_file"), std::string::npos) << daemon_->log();
  const json reply = daemon_->tool("validate", json::object());
  EXPECT_EQ(reply["worker"], "local");
  EXPECT_EQ(reply.value("ok", false), true);
}

// The sandbox holds on a worker: what a job there can reach. Each probe
// prints its name only when the job managed what it must not.
TEST_F(ClusterTest, AJobOnAWorkerIsSandboxedLikeALocalHeavyJob) {
  start_nats();
  tree_.mkdir("w1-keys");
  Child maker({bin_path("loopr-runner"), "--new-nkey", tree_.path("w1-keys/w1.seed")},
              tree_.path("w1-keys/w1.pub"));
  ASSERT_EQ(maker.wait_exit(10s), 0);
  start_looprd({}, "placeholder");
  const std::vector<std::pair<std::string, std::string>> probes = {
      {"other-repo-read", "cat " + tree_.path("workers/w1/repos/other.git/secret")},
      {"tmp-listed", "ls " + tree_.path("workers/w1/tmp")},
      {"creds-read", "cat " + tree_.path("w1-keys/w1.seed")},
      {"nats-reached", "(echo > /dev/tcp/127.0.0.1/" + std::to_string(nats_->port()) + ")"},
      {"usr-written", "touch /usr/loopr-was-here"},
      {"mounted", "mount -t tmpfs none /mnt"},
      {"shadow-read", "cat /etc/shadow"},
      // looprd itself, on this same machine: its socket, its process.
      {"daemon-socket-seen", "test -e " + daemon_->socket_path()},
      {"looprd-signalled", "kill -0 " + std::to_string(daemon_->pid())},
      {"looprd-environ-read", "cat /proc/" + std::to_string(daemon_->pid()) + "/environ"},
  };
  std::string script;
  for (const auto& [name, command] : probes)
    script += "if " + command + " >/dev/null 2>&1; then echo " + name + "; fi; ";
  script += "git log --oneline -1 >/dev/null 2>&1 && echo git-works; echo done";
  write_script(script);
  ASSERT_TRUE(eventually([&] { return connected(); })) << daemon_->log();
  // The server has no authorization: the key only has to stay unread.
  add_worker({"w1", {}, tree_.path("w1-keys/w1.seed")});
  // Another repository's files on the worker, and a bundle being fetched.
  tree_.write("workers/w1/repos/other.git/secret", "another repository\n");
  tree_.write("workers/w1/tmp/x.bundle", "a bundle\n");
  const json reply = daemon_->tool("validate", json::object());
  ASSERT_EQ(reply["worker"], "w1") << reply.dump(2) << worker_logs();
  const std::string out = reply["output"].value("stdout", "");
  EXPECT_NE(out.find("done"), std::string::npos) << out;
  for (const auto& [name, command] : probes)
    EXPECT_EQ(out.find(name), std::string::npos) << command << " worked:\n" << out;
  // Its own repository's git folder is there, read-only, as for a local job.
  EXPECT_NE(out.find("git-works"), std::string::npos) << out;
  // And the probes that read can succeed where nothing confines them: run
  // here, outside any sandbox, they find the credentials and looprd. (Only
  // these: the others would write to this machine.)
  std::string control;
  for (const auto& [name, command] : probes) {
    if (name == "creds-read" || name == "daemon-socket-seen" || name == "looprd-signalled") {
      control += "if " + command + " >/dev/null 2>&1; then echo " + name + "; fi; ";
    }
  }
  const std::string unconfined = tree_.path("unconfined.sh");
  tree_.write("unconfined.sh", control + "\n");
  Child host({"/bin/sh", unconfined}, tree_.path("unconfined.log"));
  ASSERT_EQ(host.wait_exit(20s), 0);
  const std::string host_out = host.log();
  for (const char* name : {"creds-read", "daemon-socket-seen", "looprd-signalled"})
    EXPECT_NE(host_out.find(name), std::string::npos) << name << ":\n" << host_out;
}

// A code loop whose validations run on a worker ends as it would here.
TEST(ClusterLoop, ACodeLoopsValidationsRunOnAWorkerAndTheLoopCompletes) {
  TempTree tree;
  NatsServer nats(tree);
  nats.start();
  TempTree scripts;
  SampleRepo repo;
  const std::vector<json> turns = {turn({read_call("r1")}, {{"usage", usage(1000, 20)}}),
                                   turn({edit_call("e1")}, {{"usage", usage(1100, 30)}}),
                                   turn({complete_call("c1")}, {{"usage", usage(1200, 10)}})};
  auto daemon = start_scripted_looprd(
      scripts, {{"scripted", turns}},
      "[cluster]\nnats_url = \"" + nats.url() + "\"\nack_wait_s = 2\nqueue_timeout_s = 30\n", repo);
  ASSERT_TRUE(eventually(
      [&] { return daemon->call("metrics.get")["cluster"].value("state", "") == "connected"; }));
  Worker worker(tree, nats, {"w1"});
  const json created = create_loop(*daemon, repo.path);
  const json loop = wait_final(*daemon, created["id"], 90s);
  EXPECT_EQ(loop["status"], "completed") << loop.dump(2) << worker.log();
  EXPECT_EQ(loop["last_validation"]["passed"], true);
  bool on_worker = false;
  for (const json& step : read_transcript(*daemon, created["id"]))
    if (step["kind"] == "validation") on_worker = step["data"].value("worker", "") == "w1";
  EXPECT_TRUE(on_worker) << worker.log();
}

}  // namespace
}  // namespace loopr::test
