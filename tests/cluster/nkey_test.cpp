// NATS user nkeys (cluster/nkey.hpp). That nats-server accepts the public
// keys made here is proven end to end in cluster_looprd_test.
#include "cluster/nkey.hpp"

#include <gtest/gtest.h>

#include "tests/support/temp_tree.hpp"

namespace loopr::cluster {
namespace {

TEST(Nkey, ANewSeedIsAUserSeedWithAUserPublicKey) {
  auto seed = new_user_seed();
  ASSERT_TRUE(seed) << seed.error().message;
  EXPECT_EQ(seed->size(), 58u);
  EXPECT_EQ(seed->substr(0, 2), "SU");
  auto key = user_public_key(*seed);
  ASSERT_TRUE(key) << key.error().message;
  EXPECT_EQ(key->size(), 56u);
  EXPECT_EQ((*key)[0], 'U');
  // The same seed, the same key; another seed, another key.
  EXPECT_EQ(*user_public_key(*seed), *key);
  auto other = new_user_seed();
  ASSERT_TRUE(other);
  EXPECT_NE(*user_public_key(*other), *key);
}

TEST(Nkey, RefusesWhatIsNotAUserSeed) {
  auto seed = new_user_seed();
  ASSERT_TRUE(seed);
  std::string corrupted = *seed;
  corrupted[10] = corrupted[10] == 'A' ? 'B' : 'A';  // the checksum no longer holds
  EXPECT_FALSE(user_public_key(corrupted));
  EXPECT_FALSE(user_public_key(seed->substr(0, 40)));
  EXPECT_FALSE(user_public_key("SU-not-base32!"));
  EXPECT_FALSE(user_public_key(""));
  auto key = user_public_key(*seed);
  ASSERT_TRUE(key);
  EXPECT_FALSE(user_public_key(*key)) << "a public key is not a seed";
}

TEST(Nkey, ReadsTheSeedLineOfAFile) {
  test::TempTree tree;
  auto seed = new_user_seed();
  ASSERT_TRUE(seed);
  tree.write("a.nk", "# loopr worker\n  " + *seed + "\n");
  auto read = read_user_seed(tree.path("a.nk"));
  ASSERT_TRUE(read) << read.error().message;
  EXPECT_EQ(*read, *seed);
  tree.write("b.nk", "nothing here\n");
  EXPECT_FALSE(read_user_seed(tree.path("b.nk")));
  EXPECT_FALSE(read_user_seed(tree.path("missing.nk")));
}

}  // namespace
}  // namespace loopr::cluster
