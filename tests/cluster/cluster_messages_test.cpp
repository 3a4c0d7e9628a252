// What looprd and its workers say through NATS (cluster/cluster_messages.hpp):
// subjects, round trips, and hostile payloads refused with a clear error.
#include "cluster/cluster_messages.hpp"

#include <gtest/gtest.h>

namespace loopr::cluster {
namespace {

const std::string kCommit = "0123456789abcdef0123456789abcdef01234567";

ClusterJob sample_job() {
  ClusterJob job;
  job.daemon = "d1";
  job.lane = "heavy";
  job.labels = {"gpu"};
  job.repo_key = "abc123";
  job.repo_name = "repo";
  job.commit = kCommit;
  job.cwd = "src";
  job.nonce = "5eed";
  job.job.job_id = "c-7";
  job.job.tool = "validate";
  job.job.args = {{"x", 1}};
  job.job.timeout_ms = 1000;
  job.job.max_output_bytes = 100;
  return job;
}

TEST(ClusterSubjects, NameLanesAndLabelSetsWhateverTheirOrder) {
  EXPECT_EQ(jobs_subject("heavy", {}), "loopr.jobs.heavy.any");
  EXPECT_EQ(jobs_subject("heavy", {"gpu", "arch=arm64"}), "loopr.jobs.heavy.arch=arm64+gpu");
  EXPECT_EQ(jobs_subject("heavy", {"arch=arm64", "gpu", "gpu"}), "loopr.jobs.heavy.arch=arm64+gpu");
  EXPECT_EQ(consumer_name("heavy", {}), "loopr_heavy_any");
  // One name per label set, whatever the order; never one name for two sets.
  EXPECT_EQ(consumer_name("heavy", {"gpu", "arch=arm64"}),
            consumer_name("heavy", {"arch=arm64", "gpu"}));
  EXPECT_NE(consumer_name("heavy", {"a", "b"}), consumer_name("heavy", {"a_b"}));
  EXPECT_NE(consumer_name("heavy", {"arch=x"}), consumer_name("heavy", {"arch-x"}));
  EXPECT_NE(consumer_name("heavy", {"gpu"}), consumer_name("no-net", {"gpu"}));
  EXPECT_EQ(daemon_subject("results", "d1"), "loopr.results.d1");
  EXPECT_EQ(worker_subject("w1"), "loopr.workers.w1");
}

TEST(ClusterSubjects, AWorkerTakesTheJobsOfEverySubsetOfItsLabels) {
  const auto subsets = label_subsets({"gpu", "arch=x86"});
  ASSERT_EQ(subsets.size(), 4u);
  std::vector<std::string> subjects;
  for (const auto& subset : subsets)
    subjects.push_back(jobs_subject("heavy", subset));
  std::sort(subjects.begin(), subjects.end());
  EXPECT_EQ(subjects,
            (std::vector<std::string>{"loopr.jobs.heavy.any", "loopr.jobs.heavy.arch=x86",
                                      "loopr.jobs.heavy.arch=x86+gpu", "loopr.jobs.heavy.gpu"}));
  // A worker holds few labels: the rest are not subscribed to.
  EXPECT_EQ(label_subsets({"a", "b", "c", "d", "e", "f", "g", "h"}).size(),
            std::size_t{1} << kMaxWorkerLabels);
}

TEST(ClusterMessages, RoundTrip) {
  const ClusterJob job = sample_job();
  auto parsed = parse_cluster_job(encode(job));
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->commit, kCommit);
  EXPECT_EQ(parsed->cwd, "src");
  EXPECT_EQ(parsed->job, job.job);
  EXPECT_EQ(parsed->labels, job.labels);
  EXPECT_EQ(parsed->nonce, "5eed");

  ClusterResult result;
  result.worker = "w1";
  result.delivery = 2;
  result.result.job_id = "c-7";
  result.result.exit_code = 3;
  result.result.output = std::string("bytes \xff\x00 kept", 14);
  auto back = parse_cluster_result(encode(result));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->worker, "w1");
  EXPECT_EQ(back->delivery, 2u);
  EXPECT_EQ(back->result, result.result);

  BundleChunk chunk;
  chunk.seq = 3;
  chunk.last = true;
  chunk.bytes = std::string("PACK\n\0\x01", 7);
  auto chunk_back = parse_bundle_chunk(encode(chunk));
  ASSERT_TRUE(chunk_back);
  EXPECT_EQ(chunk_back->bytes, chunk.bytes);
  EXPECT_TRUE(chunk_back->last);

  WorkerPresence presence;
  presence.id = "w1";
  presence.labels = {"gpu"};
  presence.lanes = {"heavy"};
  presence.slots = 2;
  presence.running = {{"c-7", "d1", "validate", 5}};
  auto presence_back = parse_worker_presence(encode(presence));
  ASSERT_TRUE(presence_back);
  EXPECT_EQ(presence_back->running.size(), 1u);
  EXPECT_EQ(presence_back->slots, 2u);
}

TEST(ClusterMessages, RefuseHostilePayloads) {
  EXPECT_FALSE(parse_cluster_job("{not json"));
  EXPECT_FALSE(parse_cluster_job("[]"));
  ClusterJob job = sample_job();
  job.cwd = "../../etc";
  EXPECT_FALSE(parse_cluster_job(encode(job))) << "a cwd that leaves the worktree";
  job = sample_job();
  job.cwd = "/etc";
  EXPECT_FALSE(parse_cluster_job(encode(job)));
  job = sample_job();
  job.commit = "HEAD; rm -rf /";
  EXPECT_FALSE(parse_cluster_job(encode(job))) << "a commit that is not 40 hex digits";
  job = sample_job();
  job.repo_key = "../other";
  EXPECT_FALSE(parse_cluster_job(encode(job))) << "a repository key that names a path";
  job = sample_job();
  job.daemon = "d1.>";
  EXPECT_FALSE(parse_cluster_job(encode(job))) << "a subject wildcard";

  EXPECT_FALSE(parse_cluster_result(R"({"worker":"w 1","result":{}})"));
  // A worker may not pass for this machine.
  ClusterResult local;
  local.worker = "local";
  local.result.job_id = "c-1";
  EXPECT_FALSE(parse_cluster_result(encode(local)));
  job = sample_job();
  job.nonce = "";
  EXPECT_FALSE(parse_cluster_job(encode(job))) << "a job without its nonce";
  job = sample_job();
  job.repo_name = std::string("caf\xe9\xff", 5);  // not UTF-8: shown with '?', never thrown on
  auto named = parse_cluster_job(encode(job));
  ASSERT_TRUE(named) << named.error().message;
  EXPECT_EQ(named->repo_name, "caf??");
  EXPECT_FALSE(parse_cluster_result(R"({"worker":"w1","result":{"type":"job"}})"));
  EXPECT_FALSE(parse_bundle_request(
      R"({"job_id":"c","repo_key":"k","commit":"0123456789abcdef0123456789abcdef01234567","worker":"w","have":["x"]})"));
  EXPECT_FALSE(parse_bundle_chunk("no header"));
  EXPECT_FALSE(parse_worker_presence(R"({"id":"w1","labels":["a b"],"lanes":[],"slots":1})"));
  EXPECT_FALSE(parse_worker_presence(R"({"id":"w1","labels":[],"lanes":[],"slots":0})"));
  auto error = parse_progress(R"({"kind":"exploded","job_id":"c","worker":"w"})");
  ASSERT_FALSE(error);
  EXPECT_EQ(error.error().code, errc::protocol);
  EXPECT_NE(error.error().message.find("kind"), std::string::npos);
}

}  // namespace
}  // namespace loopr::cluster
