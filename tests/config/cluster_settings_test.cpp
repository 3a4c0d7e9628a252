// [cluster] (issue 28, docs/cluster.md): what loopr.toml may say of workers
// through NATS, and the clear errors for what it may not.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/config/settings_merge.hpp"

namespace loopr::config::test {
namespace {

using ::testing::HasSubstr;

TEST(ClusterSettings, AreOffByDefault) {
  const Settings s = Settings::defaults();
  EXPECT_FALSE(s.cluster.configured());
  EXPECT_EQ(s.cluster.lanes, std::vector<std::string>{"heavy"});
  EXPECT_EQ(s.cluster.on_queue_timeout, "local");
}

TEST(ClusterSettings, ALoopbackServerNeedsNoCredentials) {
  const Settings s = merged_settings(
      "[cluster]\nnats_url = \"nats://127.0.0.1:4222\"\nrequire_labels = [\"gpu\", "
      "\"arch=arm64\"]\nqueue_timeout_s = 5\non_queue_timeout = \"fail\"\nack_wait_s = 10\n"
      "admit = [\"w1\"]\n");
  EXPECT_TRUE(s.cluster.configured());
  EXPECT_EQ(s.cluster.require_labels, (std::vector<std::string>{"gpu", "arch=arm64"}));
  EXPECT_EQ(s.cluster.queue_timeout_s, 5);
  EXPECT_EQ(s.cluster.on_queue_timeout, "fail");
  EXPECT_EQ(s.cluster.ack_wait_s, 10);
  EXPECT_EQ(s.cluster.admit, std::vector<std::string>{"w1"});
}

TEST(ClusterSettings, AServerElsewhereNeedsACredentialsFileNotASecretInTheConfig) {
  EXPECT_THAT(settings_error("[cluster]\nnats_url = \"nats://10.0.0.5:4222\"\n"),
              HasSubstr("creds_file"));
  const Settings s = merged_settings(
      "[cluster]\nnats_url = \"tls://nats.example:4222\"\ncreds_file = "
      "\"~/.config/loopr/nats.seed\"\n");
  EXPECT_EQ(s.cluster.creds_file, "/home/ada/.config/loopr/nats.seed");
}

TEST(ClusterSettings, RefusesWhatCannotWork) {
  EXPECT_THAT(settings_error("[cluster]\nnats_url = \"http://127.0.0.1:4222\"\n"),
              HasSubstr("nats:// or tls://"));
  EXPECT_THAT(settings_error("[cluster]\nnats_url = \"nats://127.0.0.1\"\nrequire_labels = "
                             "[\"has space\"]\n"),
              HasSubstr("is not a label"));
  EXPECT_THAT(settings_error("[cluster]\nnats_url = \"nats://127.0.0.1\"\nlanes = [\"gpu\"]\n"),
              HasSubstr("unknown lane"));
  // The net lane's calls need the egress proxy, and web_search's carry a key.
  EXPECT_THAT(settings_error("[cluster]\nnats_url = \"nats://127.0.0.1\"\nlanes = [\"net\"]\n"),
              HasSubstr("stays on this machine"));
  EXPECT_THAT(settings_error("[cluster]\nnats_url = \"nats://127.0.0.1\"\non_queue_timeout = "
                             "\"retry\"\n"),
              HasSubstr("cluster.on_queue_timeout"));
  EXPECT_THAT(settings_error("[cluster]\nnats_url = \"nats://127.0.0.1\"\ntls_cert_file = "
                             "\"/etc/c.pem\"\n"),
              HasSubstr("both tls_cert_file and tls_key_file"));
  EXPECT_THAT(settings_error("[cluster]\nnats_url = \"nats://127.0.0.1\"\nack_wait_s = 0\n"),
              HasSubstr("cluster.ack_wait_s"));
  EXPECT_THAT(settings_error("[cluster]\npassword = \"x\"\n"), HasSubstr("unknown key"));
}

TEST(ClusterSettings, TellsLoopbackFromElsewhere) {
  EXPECT_TRUE(cluster_url_is_loopback("nats://127.0.0.1:4222"));
  EXPECT_TRUE(cluster_url_is_loopback("nats://localhost:4222"));
  EXPECT_TRUE(cluster_url_is_loopback("nats://[::1]:4222"));
  EXPECT_TRUE(cluster_url_is_loopback("nats://user@127.0.0.2:4222"));
  EXPECT_FALSE(cluster_url_is_loopback("nats://127.example:4222"));
  EXPECT_FALSE(cluster_url_is_loopback("nats://10.0.0.5:4222"));
  EXPECT_FALSE(cluster_url_is_loopback("nats://localhost.evil.example:4222"));
  EXPECT_FALSE(cluster_url_is_loopback("not a url"));
}

}  // namespace
}  // namespace loopr::config::test
