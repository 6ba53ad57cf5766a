// The inelastic contact velocity update (models/integrate/midpoint.h) on hand-computed cases:
// pressed + sticking keeps v-hat's relative velocity, pressed + sliding keeps only v-hat's normal
// component, an open contact changes nothing, a D-contact corrects both nodes symmetrically.
#include "models/integrate/midpoint.h"

#include <gtest/gtest.h>

#include "fixtures/mass_spring.h"

namespace condsim {
namespace {

TEST(InelasticContacts, HandComputedCases) {
  const Mat3 up = ContactFrame(Vec3(0, 0, 1));  // rows: n = z, t1, t2 spanning x-y
  ContactSet c;
  c.Add(0, -1, up, 0, 0.5, 0.5);  // sticking
  c.Add(1, -1, up, 0, 0.5, 0.5);  // sliding (|lambda_t| = mu lambda_n)
  c.Add(2, -1, up, 0, 0.5, 0.5);  // open
  c.Add(3, 4, up, 0, 0.5, 0.5);   // D-contact, sliding
  const std::vector<Scalar> lambda = {1, 0.1, 0, 1, 0.5, 0, 0, 0, 0, 2, 0, 1};
  const std::vector<Scalar> vhat = {0.1, 0.2, 0.0, 0.3, 0.0, 0.05, 1, 1, 1, 0, 0, 0.2, 0, 0, 0};
  // 2 v-hat - v_k for some v_k
  std::vector<Scalar> v = {0.4, -0.2, 0.7, 0.5, 0.1, 0.3, 2, 2, 2, 0.1, 0.2, 0.6, 0.3, 0.1, -0.2};
  const std::vector<Scalar> before = v;
  ApplyInelasticContacts(c, lambda, vhat, std::vector<Scalar>(5, 1), nullptr, &v);  // equal masses
  // node 0 sticks: all of v-hat
  EXPECT_DOUBLE_EQ(v[0], 0.1);
  EXPECT_DOUBLE_EQ(v[1], 0.2);
  EXPECT_DOUBLE_EQ(v[2], 0.0);
  // node 1 slides: normal from v-hat, tangential kept
  EXPECT_DOUBLE_EQ(v[3], 0.5);
  EXPECT_DOUBLE_EQ(v[4], 0.1);
  EXPECT_DOUBLE_EQ(v[5], 0.05);
  // node 2 open: unchanged
  for (int k = 6; k < 9; ++k) EXPECT_EQ(v[k], before[k]);
  // D-contact: relative normal velocity (0.6 - -0.2 = 0.8) becomes v-hat's (0.2): each node
  // moves by half of the difference, tangential relative motion kept
  EXPECT_NEAR(v[11], 0.6 - 0.3, 1e-15);
  EXPECT_NEAR(v[14], -0.2 + 0.3, 1e-15);
  EXPECT_NEAR(v[11] - v[14], 0.2, 1e-15);
  EXPECT_DOUBLE_EQ(v[9], 0.1);
  EXPECT_DOUBLE_EQ(v[12], 0.3);
}

}  // namespace
}  // namespace condsim
