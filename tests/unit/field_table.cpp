// SPDX-License-Identifier: BSL-1.0
#include <letterbox/field_table.hpp>

#include <catch2/catch.hpp>

namespace unit_field_table {

using namespace letterbox;

TEST_CASE("a field table keeps insertion order and replaces a name in place", "[field_table]") {
    field_table t{{"b", std::int32_t{1}}, {"a", "x"}};
    t.set("c", true);
    t.set("b", std::int64_t{2});
    std::vector<std::string> names;
    for (const auto& [name, value] : t)
        names.push_back(name);
    CHECK(names == std::vector<std::string>{"b", "a", "c"});
    CHECK(t.get<std::int64_t>("b") == 2);
    CHECK_FALSE(t.get<std::int32_t>("b").has_value());
    CHECK(t.erase("a"));
    CHECK_FALSE(t.erase("a"));
    CHECK(t.size() == 2);
}

TEST_CASE("field values compare with their types: int 1 is not long 1 nor string 1",
          "[field_table]") {
    CHECK_FALSE(field_value(std::int32_t{1}) == field_value(std::int64_t{1}));
    CHECK_FALSE(field_value(std::int32_t{1}) == field_value("1"));
    CHECK(field_value(std::int32_t{1}) == field_value(std::int32_t{1}));
    CHECK(field_value(std::int32_t{1}).as_integer() == field_value(std::int64_t{1}).as_integer());
    CHECK_FALSE(field_value("1").as_integer().has_value());
    CHECK_FALSE(field_value(true).as_integer().has_value());
}

TEST_CASE("field values hold every AMQP table type including nested tables and arrays",
          "[field_table]") {
    field_table inner{{"k", "v"}};
    field_array arr{field_value(std::int8_t{-1}), field_value(std::uint8_t{255}),
                    field_value(inner)};
    field_table t;
    t.set("void", nullptr);
    t.set("bool", false);
    t.set("i16", std::int16_t{-2});
    t.set("u16", std::uint16_t{2});
    t.set("u32", std::uint32_t{4000000000u});
    t.set("f", 1.5f);
    t.set("d", 2.5);
    t.set("dec", decimal{2, 12345});
    t.set("ts", timestamp{std::chrono::seconds{1700000000}});
    t.set("bytes", byte_array{std::byte{0}, std::byte{0xff}});
    t.set("arr", arr);
    t.set("table", inner);
    CHECK(t.find("void")->is_void());
    CHECK(t.get<field_array>("arr")->size() == 3);
    CHECK(t.get<field_table>("table")->get<std::string>("k") == "v");
    nlohmann::json j = t;
    CHECK(j["void"].is_null());
    CHECK(j["u32"] == 4000000000u);
    CHECK(j["dec"]["$decimal"] == nlohmann::json::array({2, 12345}));
    CHECK(j["ts"]["$timestamp"] == 1700000000);
    CHECK(j["bytes"]["$bytes"] == "00ff");
    CHECK(j["arr"][2]["k"] == "v");
}

TEST_CASE("field tables compare order-sensitively, like their wire encoding", "[field_table]") {
    field_table a{{"x", "1"}, {"y", "2"}};
    field_table b{{"y", "2"}, {"x", "1"}};
    CHECK_FALSE(a == b);
    CHECK(a == field_table{{"x", "1"}, {"y", "2"}});
}

} // namespace unit_field_table
