#include "runner/job_environment.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace loopr::runner {
namespace {

bool has(const std::vector<std::string>& env, const std::string& entry) {
  return std::find(env.begin(), env.end(), entry) != env.end();
}

bool has_name(const std::vector<std::string>& env, const std::string& name) {
  return std::any_of(env.begin(), env.end(),
                     [&](const std::string& e) { return e.rfind(name + "=", 0) == 0; });
}

TEST(JobEnvironment, SecretsAndDaemonVariablesNeverReachAJob) {
  const auto env = job_environment({{"ANTHROPIC_API_KEY", "sk-secret"},
                                    {"OPENAI_API_KEY", "sk-other"},
                                    {"LOOPR_SOCKET", "/run/user/0/loopr/looprd.sock"},
                                    {"SSH_AUTH_SOCK", "/tmp/agent"},
                                    {"DBUS_SESSION_BUS_ADDRESS", "unix:path=/run/bus"},
                                    {"LD_PRELOAD", "/tmp/evil.so"}},
                                   {.lane = "no-net", .max_output_bytes = 1000});
  for (const char* name : {"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "LOOPR_SOCKET", "SSH_AUTH_SOCK",
                           "DBUS_SESSION_BUS_ADDRESS", "LD_PRELOAD"}) {
    EXPECT_FALSE(has_name(env, name)) << name;
  }
}

TEST(JobEnvironment, AllowlistedValuesPassAndDefaultsAreSet) {
  const auto env =
      job_environment({{"CC", "clang"}, {"LANG", "de_DE.UTF-8"}}, {.lane = "heavy",
                                                                   .stream_output = true,
                                                                   .job_init = true,
                                                                   .max_output_bytes = 4096,
                                                                   .memory_mb = 512});
  EXPECT_TRUE(has(env, "CC=clang"));
  EXPECT_TRUE(has(env, "LANG=de_DE.UTF-8"));
  EXPECT_TRUE(has(env, "HOME=/tmp"));
  EXPECT_TRUE(has(env, "PATH=/usr/local/bin:/usr/bin:/bin"));
  EXPECT_TRUE(has(env, "LOOPR_LANE=heavy"));
  EXPECT_TRUE(has(env, "LOOPR_MAX_OUTPUT_BYTES=4096"));
  EXPECT_TRUE(has(env, "LOOPR_NETWORK=off"));
  EXPECT_TRUE(has(env, "LOOPR_STREAM_OUTPUT=1"));
  EXPECT_TRUE(has(env, "LOOPR_JOB_INIT=1"));
  EXPECT_TRUE(has(env, "LOOPR_MEMORY_LIMIT_MB=512"));
}

TEST(JobEnvironment, ALaneThatDoesNotStreamSaysNothingAboutStreamingOrInit) {
  const auto env = job_environment({}, {.lane = "net", .network = true, .max_output_bytes = 4096});
  EXPECT_TRUE(has(env, "LOOPR_NETWORK=on"));
  EXPECT_FALSE(has_name(env, "LOOPR_STREAM_OUTPUT"));
  EXPECT_FALSE(has_name(env, "LOOPR_JOB_INIT"));
}

TEST(JobEnvironment, TheRequestCannotOverrideTheRunnersOwnVariables) {
  const auto env = job_environment({{"LOOPR_LANE", "net"},
                                    {"LOOPR_NETWORK", "on"},
                                    {"LOOPR_STREAM_OUTPUT", "1"},
                                    {"LOOPR_JOB_INIT", "1"}},
                                   {.lane = "no-net", .max_output_bytes = 10});
  EXPECT_TRUE(has(env, "LOOPR_LANE=no-net"));
  EXPECT_FALSE(has(env, "LOOPR_LANE=net"));
  EXPECT_TRUE(has(env, "LOOPR_NETWORK=off"));
  EXPECT_FALSE(has_name(env, "LOOPR_STREAM_OUTPUT"));
  EXPECT_FALSE(has_name(env, "LOOPR_JOB_INIT"));
}

}  // namespace
}  // namespace loopr::runner
