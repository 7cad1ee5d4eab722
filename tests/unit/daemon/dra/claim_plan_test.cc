#include "vgpu/dra/claim_plan.h"

#include <gtest/gtest.h>

namespace vgpu::dra {
namespace {

using nlohmann::json;

class ClaimPlanTest : public ::testing::Test {
 protected:
  ClaimPlanTest() {
    gpus_ = {{0, "GPU-a", 16ull << 30, 0, "0000:17:00.0", "", {}, {}, "Test"},
             {1, "GPU-b", 16ull << 30, 0, "0000:18:00.0", "", {}, {}, "Test"}};
    options_ = {"gpu.vgpu.io", "node-a", &gpus_, slots::ManagedPolicy::kRefuse};
  }
  json Claim(json results, json config = json::array(), std::string uid = "u1") {
    return {
        {"metadata", {{"uid", uid}, {"name", "c"}, {"namespace", "ns"}}},
        {"status", {{"allocation", {{"devices", {{"results", results}, {"config", config}}}}}}}};
  }
  json AllocResult(std::string device, json consumed = nullptr, std::string request = "gpu") {
    json r = {
        {"request", request}, {"driver", "gpu.vgpu.io"}, {"pool", "node-a"}, {"device", device}};
    if (!consumed.is_null()) {
      r["consumedCapacity"] = consumed;
    }
    return r;
  }
  json Opaque(std::string source, json params, json requests = json::array()) {
    return {{"source", source},
            {"requests", requests},
            {"opaque", {{"driver", "gpu.vgpu.io"}, {"parameters", params}}}};
  }
  json Params(json extra) {
    extra["apiVersion"] = "gpu.vgpu.io/v1alpha1";
    extra["kind"] = "GpuConfig";
    return extra;
  }
  vgpu::Result<ClaimPlan> Plan(const json& claim) { return PlanClaim(claim, ref_, options_); }

  std::vector<alloc::GpuInfo> gpus_;
  PlanOptions options_;
  ClaimRef ref_{"ns", "c", "u1"};
};

TEST_F(ClaimPlanTest, ShareTakesConsumedCapacityAndShareId) {
  json r = AllocResult("gpu-1-share", {{"memory", "8Gi"}, {"cores", "30"}});
  r["shareID"] = "s-1";
  auto plan = Plan(Claim(json::array({r})));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->devices.size(), 1u);
  const auto& d = plan->devices[0];
  EXPECT_EQ(d.gpu, 1u);
  EXPECT_FALSE(d.exclusive);
  EXPECT_EQ(d.memory_bytes, 8ull << 30);
  EXPECT_EQ(d.core_percent, 30u);
  EXPECT_EQ(d.share_id, "s-1");
  EXPECT_EQ(d.managed_policy, slots::ManagedPolicy::kRefuse);
}

TEST_F(ClaimPlanTest, ShareWithoutConsumedCapacityGetsThePublishedDefaults) {
  auto plan = Plan(Claim(json::array({AllocResult("gpu-0-share")})));
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->devices[0].memory_bytes, 16ull << 30);
  EXPECT_EQ(plan->devices[0].core_percent, 100u);
}

TEST_F(ClaimPlanTest, WholeGpuAndOtherDriversResults) {
  json other = AllocResult("gpu-0");
  other["driver"] = "nic.example.com";
  auto plan = Plan(Claim(json::array({AllocResult("gpu-0"), other})));
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->devices.size(), 1u);
  EXPECT_TRUE(plan->devices[0].exclusive);
}

TEST_F(ClaimPlanTest, ClaimConfigOverridesClassConfigPerRequest) {
  json config = json::array(
      {Opaque("FromClaim", Params({{"managed_policy", "refuse"}}), json::array({"other"})),
       Opaque("FromClaim", Params({{"managed_policy", "allow-uncounted"}}), json::array({"gpu"})),
       Opaque("FromClass", Params({{"managed_policy", "refuse"}}))});
  auto plan = Plan(Claim(json::array({AllocResult("gpu-0-share", nullptr, "gpu/small")}), config));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->devices[0].managed_policy, slots::ManagedPolicy::kAllowUncounted);
}

TEST_F(ClaimPlanTest, OpaqueConfigSetsComputeModeAndManagedPolicyBySchemaNames) {
  json config = json::array({Opaque("FromClass", Params({{"compute_mode", "weight"}})),
                             Opaque("FromClaim", Params({{"managed_policy", "allow-uncounted"}}))});
  auto plan = Plan(Claim(json::array({AllocResult("gpu-0-share")}), config));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->devices[0].compute_mode, slots::ComputeMode::kWeight);
  EXPECT_EQ(plan->devices[0].managed_policy, slots::ManagedPolicy::kAllowUncounted);
  // Without config: cap, and the node's default managed policy.
  auto plain = Plan(Claim(json::array({AllocResult("gpu-0-share")})));
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->devices[0].compute_mode, slots::ComputeMode::kCap);
  EXPECT_EQ(plain->devices[0].managed_policy, slots::ManagedPolicy::kRefuse);
  // The claim's config overrides the class's for the same setting.
  json back = json::array({Opaque("FromClaim", Params({{"compute_mode", "cap"}})),
                           Opaque("FromClass", Params({{"compute_mode", "weight"}}))});
  auto overridden = Plan(Claim(json::array({AllocResult("gpu-0-share")}), back));
  ASSERT_TRUE(overridden.ok());
  EXPECT_EQ(overridden->devices[0].compute_mode, slots::ComputeMode::kCap);
}

TEST_F(ClaimPlanTest, ErrorsNameWhatIsWrong) {
  struct Case {
    json claim;
    StatusCode code;
    std::string text;
  } cases[] = {
      {Claim(json::array({AllocResult("gpu-0")}), json::array(), "u2"),
       StatusCode::kFailedPrecondition, "uid u2"},
      {json{{"metadata", {{"uid", "u1"}}}}, StatusCode::kFailedPrecondition, "not allocated"},
      {Claim(json::array({AllocResult("gpu-5")})), StatusCode::kNotFound, "no such device"},
      {Claim(json::array({AllocResult("gpu-0-share", {{"cores", "0"}})})),
       StatusCode::kInvalidArgument, "outside 1..100"},
      {Claim(json::array({AllocResult("gpu-0-share", {{"memory", "lots"}})})),
       StatusCode::kInvalidArgument, "quantity 'lots'"},
      {Claim(json::array({AllocResult("gpu-0")}),
             json::array({Opaque("FromClaim", Params({{"x", "1"}}))})),
       StatusCode::kInvalidArgument, "'x' is unknown"},
      // The old camel-case spelling is not a second name of the setting.
      {Claim(json::array({AllocResult("gpu-0")}),
             json::array({Opaque("FromClaim", Params({{"computeMode", "weight"}}))})),
       StatusCode::kInvalidArgument, "'computeMode' is unknown"},
      {Claim(json::array({AllocResult("gpu-0-share")}),
             json::array({Opaque("FromClaim", Params({{"compute_mode", "turbo"}}))})),
       StatusCode::kInvalidArgument, "compute_mode: 'turbo' is not one of cap | weight"},
      {Claim(json::array({AllocResult("gpu-0-share")}),
             json::array({Opaque("FromClaim", Params({{"managed_policy", "yes"}}))})),
       StatusCode::kInvalidArgument, "managed_policy: 'yes' is not one of default"},
      {Claim(json::array({AllocResult("gpu-0-share")}),
             json::array({Opaque("FromClaim", Params({{"compute_mode", 2}}))})),
       StatusCode::kInvalidArgument, "'compute_mode' must be a string"},
      // Schema settings that are the allocation's or the node's, not the claim's.
      {Claim(json::array({AllocResult("gpu-0-share")}),
             json::array({Opaque("FromClaim", Params({{"mem_quota", "0"}}))})),
       StatusCode::kInvalidArgument, "'mem_quota' is not a claim's to set"},
      {Claim(json::array({AllocResult("gpu-0-share")}),
             json::array({Opaque("FromClaim", Params({{"unknown_policy", "allow-log"}}))})),
       StatusCode::kInvalidArgument, "'unknown_policy' is not a claim's to set"},
      {Claim(json::array({AllocResult("gpu-0")}),
             json::array({Opaque("FromClaim", json{{"managed_policy", "refuse"}})})),
       StatusCode::kInvalidArgument, "apiVersion gpu.vgpu.io/v1alpha1"},
  };
  for (const auto& c : cases) {
    auto plan = Plan(c.claim);
    ASSERT_FALSE(plan.ok()) << c.text;
    EXPECT_EQ(plan.status().code(), c.code) << plan.status().ToString();
    EXPECT_NE(plan.status().message().find(c.text), std::string::npos) << plan.status().ToString();
  }
  json foreign = AllocResult("gpu-0");
  foreign["pool"] = "node-b";
  auto plan = Plan(Claim(json::array({foreign})));
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("not this node's"), std::string::npos);
}

}  // namespace
}  // namespace vgpu::dra
