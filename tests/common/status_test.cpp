// PT_RETURN_IF_ERROR: returns the first failing Status, evaluates its argument once, lets ok through.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "profile_train/common/status.h"

namespace profile_train {
namespace {

Status step(std::vector<std::string>& log, const std::string& name, bool ok) {
  log.push_back(name);
  return ok ? Status::Ok() : BadInput(name + " failed");
}

Status three_steps(std::vector<std::string>& log, bool first_ok, bool second_ok) {
  PT_RETURN_IF_ERROR(step(log, "first", first_ok));
  PT_RETURN_IF_ERROR(step(log, "second", second_ok));
  log.push_back("third");
  return Status::Ok();
}

StatusOr<int> in_a_status_or(bool ok) {
  PT_RETURN_IF_ERROR(ok ? Status::Ok() : NotFound("missing"));
  return 7;
}

TEST(ReturnIfError, StopsAtTheFirstFailureAndReturnsIt) {
  std::vector<std::string> log;
  const Status s = three_steps(log, true, false);
  EXPECT_EQ(s.code(), StatusCode::kBadInput);
  EXPECT_EQ(s.message(), "second failed");
  EXPECT_EQ(log, (std::vector<std::string>{"first", "second"}));
}

TEST(ReturnIfError, GoesOnWhenOkAndEvaluatesOnce) {
  std::vector<std::string> log;
  EXPECT_TRUE(three_steps(log, true, true).ok());
  EXPECT_EQ(log, (std::vector<std::string>{"first", "second", "third"}));
}

TEST(ReturnIfError, WorksInFunctionsReturningStatusOr) {
  EXPECT_EQ(*in_a_status_or(true), 7);
  const auto r = in_a_status_or(false);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace profile_train
