// The router's translation of runner results into what the model reads.
#include "daemon/tool_router.hpp"

#include <gtest/gtest.h>

namespace loopr::daemon {
namespace {

config::ToolSpec spec() {
  config::ToolSpec tool;
  tool.name = "read_file";
  tool.lane = "no-net";
  tool.max_output_bytes = 100;
  return tool;
}

proto::JobResult job(proto::JobStatus status, std::string output) {
  proto::JobResult result;
  result.job_id = "c-1";
  result.status = status;
  result.output = std::move(output);
  result.exit_code = 0;
  result.duration_ms = 3;
  return result;
}

TEST(ToolRouterOutcome, ASuccessCarriesTheToolsJson) {
  auto outcome = outcome_from_job(job(proto::JobStatus::success, R"({"content":"x"})"), spec());
  EXPECT_TRUE(outcome.ok);
  EXPECT_EQ(outcome.status, "success");
  EXPECT_EQ(outcome.output["content"], "x");
  EXPECT_EQ(outcome.duration_ms, 3u);
  EXPECT_FALSE(outcome.error);
}

TEST(ToolRouterOutcome, AToolErrorKeepsItsCodeMessageAndHint) {
  auto outcome = outcome_from_job(
      job(proto::JobStatus::failed,
          R"({"error":{"code":"not_found","message":"no a.c","hint":"list the folder"}})"),
      spec());
  EXPECT_FALSE(outcome.ok);
  EXPECT_EQ(outcome.status, "failed");
  ASSERT_TRUE(outcome.error);
  EXPECT_EQ(outcome.error->code, "not_found");
  EXPECT_EQ(outcome.error->hint, "list the folder");
}

// The tool's stdout comes from a sandboxed job: fields of the wrong type or
// hostile nesting must become a plain error, never an exception (which would
// be lost in a detached coroutine and leave a batch waiting forever).
TEST(ToolRouterOutcome, AMalformedToolErrorIsReadWithoutThrowing) {
  auto outcome = outcome_from_job(
      job(proto::JobStatus::failed, R"({"error":{"code":5,"message":["x"],"hint":null}})"), spec());
  EXPECT_EQ(outcome.status, "failed");
  ASSERT_TRUE(outcome.error);
  EXPECT_EQ(outcome.error->code, "internal");
  EXPECT_FALSE(outcome.error->message.empty());
  EXPECT_EQ(outcome.error->hint, "");

  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  auto nested = outcome_from_job(job(proto::JobStatus::success, deep), spec());
  EXPECT_FALSE(nested.ok);
  EXPECT_EQ(nested.error->code, "internal");
}

TEST(ToolRouterOutcome, AResultCutByTheOutputCapSaysToAskForLess) {
  auto result = job(proto::JobStatus::success, R"({"content":"xxxxx)");
  result.truncated = true;
  auto outcome = outcome_from_job(result, spec());
  EXPECT_FALSE(outcome.ok);
  ASSERT_TRUE(outcome.error);
  EXPECT_EQ(outcome.error->code, "too_large");
  EXPECT_TRUE(outcome.truncated);
}

TEST(ToolRouterOutcome, TimeoutsCancelsAndRunnerErrorsAreNamed) {
  auto timeout = job(proto::JobStatus::timeout, "");
  EXPECT_EQ(outcome_from_job(timeout, spec()).error->code, "timeout");
  auto cancelled = outcome_from_job(job(proto::JobStatus::cancelled, ""), spec());
  EXPECT_EQ(cancelled.status, "cancelled");
  auto error = job(proto::JobStatus::error, "");
  error.error = "runner for lane no-net restarted: the runner was killed by signal Killed";
  auto failed = outcome_from_job(error, spec());
  EXPECT_EQ(failed.status, "error");
  EXPECT_NE(failed.error->message.find("restarted"), std::string::npos);
}

TEST(ToolRouterOutcome, ToJsonHasEveryDocumentedField) {
  auto outcome = outcome_from_job(job(proto::JobStatus::success, "{}"), spec());
  outcome.call_id = "c-9";
  outcome.tool = "read_file";
  outcome.lane = "no-net";
  auto json = outcome.to_json();
  for (const char* key : {"call_id", "tool", "lane", "status", "ok", "output", "exit_code",
                          "duration_ms", "truncated"}) {
    EXPECT_TRUE(json.contains(key)) << key;
  }
  EXPECT_FALSE(json.contains("error"));
}

TEST(CompiledCatalog, TheBuiltinCatalogCompilesEverySchema) {
  auto compiled = CompiledCatalog::build(config::Catalog::builtin());
  EXPECT_EQ(compiled->schemas.size(), compiled->catalog.tools().size());
}

}  // namespace
}  // namespace loopr::daemon
