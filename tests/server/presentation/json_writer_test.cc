#include "server/presentation/json_writer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>

namespace f2obo::server::presentation {
namespace {

std::string One(double v) {
  JsonWriter w;
  w.Number(v);
  return w.str();
}

TEST(JsonWriter, PlacesCommasInNestedContainers) {
  JsonWriter w;
  w.BeginObject()
      .Key("a")
      .Int(1)
      .Key("b")
      .BeginArray()
      .Int(1)
      .BeginObject()
      .EndObject()
      .BeginArray()
      .EndArray()
      .Null()
      .EndArray()
      .Key("c")
      .BeginObject()
      .Key("d")
      .Bool(true)
      .Key("e")
      .Bool(false)
      .EndObject()
      .Key("f")
      .String("x")
      .EndObject();
  EXPECT_EQ(w.str(), R"({"a":1,"b":[1,{},[],null],"c":{"d":true,"e":false},"f":"x"})");
}

TEST(JsonWriter, EscapesQuotesBackslashesAndEveryControlCharacter) {
  JsonWriter w;
  w.BeginArray()
      .String("say \"hi\"\\ok")
      .String("a\nb\rc\td")
      .String(std::string("\x01\x1f\0z", 4))
      .String("\x7f")
      .EndArray();
  EXPECT_EQ(w.str(),
            "[\"say \\\"hi\\\"\\\\ok\",\"a\\nb\\rc\\td\",\"\\u0001\\u001f\\u0000z\","
            "\"\x7f\"]");
}

TEST(JsonWriter, PassesUtf8ThroughAndEscapesKeysToo) {
  JsonWriter w;
  w.BeginObject().Key("\xce\xbb_t \"q\"").String("\xe2\x80\x96G\xe2\x80\x96").EndObject();
  EXPECT_EQ(w.str(), "{\"\xce\xbb_t \\\"q\\\"\":\"\xe2\x80\x96G\xe2\x80\x96\"}");
}

TEST(JsonWriter, NonFiniteNumbersBecomeNull) {
  JsonWriter w;
  w.BeginObject()
      .Key("nan")
      .Number(std::nan(""))
      .Key("inf")
      .Number(std::numeric_limits<double>::infinity())
      .Key("-inf")
      .Number(-std::numeric_limits<double>::infinity())
      .Key("ok")
      .Number(1.5)
      .EndObject();
  EXPECT_EQ(w.str(), R"({"nan":null,"inf":null,"-inf":null,"ok":1.5})");
}

TEST(JsonWriter, NumbersAreShortAndRoundTripExactly) {
  EXPECT_EQ(One(0.1), "0.1");
  EXPECT_EQ(One(3.0), "3");
  EXPECT_EQ(One(-2.5e-7), "-2.5e-07");
  EXPECT_EQ(One(0.0), "0");
  for (const double v : {0.1 + 0.2, 1.0 / 3.0, 6.02214076e23, 5e-324, 1.7976931348623157e308,
                         -123456.78901234567, 55.00000000000001}) {
    const std::string text = One(v);
    EXPECT_EQ(std::strtod(text.c_str(), nullptr), v) << text;
    EXPECT_LE(text.size(), 24u) << text;
  }
}

TEST(JsonWriter, IntegersAreExactAtTheExtremes) {
  JsonWriter w;
  w.BeginArray()
      .Int(std::numeric_limits<int64_t>::min())
      .Int(std::numeric_limits<int64_t>::max())
      .Int(0)
      .EndArray();
  EXPECT_EQ(w.str(), "[-9223372036854775808,9223372036854775807,0]");
}

}  // namespace
}  // namespace f2obo::server::presentation
