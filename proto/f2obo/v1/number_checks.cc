#include "f2obo/v1/number_checks.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/reflection.h>

#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/batch.h"

namespace f2obo {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

// Why `v` breaks the rule, "" if it does not.
std::string Problem(double v, double bound, bool may_be_infinite) {
  if (std::isnan(v)) return "not finite";
  if (std::isinf(v)) return may_be_infinite ? "" : "not finite";
  if (std::abs(v) <= bound) return "";
  return bound == kMaxInputMagnitude ? InputNumberProblem(v)
                                     : absl::StrCat(v, " is beyond the bound ", bound);
}

}  // namespace

absl::Status CheckNumbers(const Message& message, const std::string& prefix, double bound,
                          const std::set<std::string>& may_be_infinite) {
  const Reflection* reflection = message.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  reflection->ListFields(message, &fields);  // the fields set, in field-number order
  for (const FieldDescriptor* f : fields) {
    const std::string path = absl::StrCat(prefix, ".", f->name());
    const bool infinite_ok = may_be_infinite.count(f->full_name()) > 0;
    if (f->cpp_type() == FieldDescriptor::CPPTYPE_DOUBLE ||
        f->cpp_type() == FieldDescriptor::CPPTYPE_FLOAT) {
      const auto value = [&](int i) {
        const bool d = f->cpp_type() == FieldDescriptor::CPPTYPE_DOUBLE;
        if (i < 0) return d ? reflection->GetDouble(message, f) : reflection->GetFloat(message, f);
        return d ? reflection->GetRepeatedDouble(message, f, i)
                 : static_cast<double>(reflection->GetRepeatedFloat(message, f, i));
      };
      if (!f->is_repeated()) {
        if (std::string p = Problem(value(-1), bound, infinite_ok); !p.empty()) {
          return absl::InvalidArgumentError(absl::StrCat(path, ": ", p));
        }
        continue;
      }
      const int n = reflection->FieldSize(message, f);
      for (int i = 0; i < n; ++i) {
        if (std::string p = Problem(value(i), bound, infinite_ok); !p.empty()) {
          return absl::InvalidArgumentError(absl::StrCat(path, "[", i, "]: ", p));
        }
      }
    } else if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      if (!f->is_repeated()) {
        absl::Status s =
            CheckNumbers(reflection->GetMessage(message, f), path, bound, may_be_infinite);
        if (!s.ok()) return s;
        continue;
      }
      const int n = reflection->FieldSize(message, f);
      for (int i = 0; i < n; ++i) {
        absl::Status s = CheckNumbers(reflection->GetRepeatedMessage(message, f, i),
                                      absl::StrCat(path, "[", i, "]"), bound, may_be_infinite);
        if (!s.ok()) return s;
      }
    }
  }
  return absl::OkStatus();
}

absl::Status CheckSpecNumbers(const v1::SessionSpec& spec, const std::string& prefix) {
  static const std::set<std::string> kMayBeInfinite = {
      "f2obo.v1.AlgorithmOptions.lambda_max",  // inf: no cap
      "f2obo.v1.ConstraintSpec.Box.lo",        // -inf: no lower bound
      "f2obo.v1.ConstraintSpec.Box.hi",        // +inf: no upper bound
  };
  return CheckNumbers(spec, prefix, kMaxInputMagnitude, kMayBeInfinite);
}

}  // namespace f2obo
