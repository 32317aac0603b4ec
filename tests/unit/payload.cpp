// SPDX-License-Identifier: BSL-1.0
#include <letterbox/payload.hpp>

#include <catch2/catch.hpp>

namespace unit_payload {

namespace demo {
struct enrolled {
    std::string student;
    int course = 0;
    friend bool operator==(const enrolled&, const enrolled&) = default;
};
inline void to_json(nlohmann::json& j, const enrolled& e) {
    j = {{"student", e.student}, {"course", e.course}};
}
inline void from_json(const nlohmann::json& j, enrolled& e) {
    j.at("student").get_to(e.student);
    j.at("course").get_to(e.course);
}
} // namespace demo

using namespace letterbox;

TEST_CASE("a typed payload round-trips through JSON and sets the content type", "[payload]") {
    message_id_generator ids(3);
    auto m = make_message(ids, "enrolled", "school", "enrolment.created", demo::enrolled{"ana", 7});
    CHECK(m.properties.content_type == "application/json");
    CHECK_FALSE(m.id.is_nil());
    std::error_code ec;
    auto back = decode_payload<demo::enrolled>(m, ec);
    REQUIRE(back);
    CHECK_FALSE(ec);
    CHECK(*back == demo::enrolled{"ana", 7});
}

TEST_CASE("a body that is not JSON decodes to payload_malformed, never a crash", "[payload]") {
    message m;
    for (std::string body :
         {std::string("{"), std::string("\xff\xfe", 2), std::string("\0\0", 2), std::string()}) {
        m.body = body;
        std::error_code ec;
        CHECK_FALSE(decode_payload<demo::enrolled>(m, ec).has_value());
        CHECK(ec == errc::payload_malformed);
    }
    m.body = "{}";
    m.properties.content_type = "text/plain";
    std::error_code ec;
    CHECK_FALSE(decode_payload<demo::enrolled>(m, ec));
    CHECK(ec == errc::payload_malformed);
}

TEST_CASE("JSON of the wrong shape decodes to payload_type_mismatch", "[payload]") {
    message m;
    m.body = R"({"student": 5})";
    std::error_code ec;
    CHECK_FALSE(decode_payload<demo::enrolled>(m, ec));
    CHECK(ec == errc::payload_type_mismatch);
    CHECK_THROWS_AS(decode_payload<demo::enrolled>(m), letterbox::error);
    try {
        (void)decode_payload<demo::enrolled>(m);
    } catch (const letterbox::error& e) {
        CHECK(e.code() == errc::payload_type_mismatch);
    }
}

TEST_CASE("a value with invalid UTF-8 cannot be encoded and leaves the message unchanged",
          "[payload]") {
    message m;
    m.body = "before";
    auto ec = encode_payload(m, demo::enrolled{std::string("\xff", 1), 1});
    CHECK(ec == errc::payload_unencodable);
    CHECK(m.body == "before");
    message_id_generator ids(1);
    CHECK_THROWS_AS(make_message(ids, "t", "", "q", demo::enrolled{std::string("\xc3", 1), 1}),
                    letterbox::error);
}

TEST_CASE("validate_payload checks a JSON body against its declared content type", "[payload]") {
    letterbox::message m;
    m.body = "{\"enrollment\": 7}";
    CHECK_FALSE(letterbox::validate_payload(m)); // no content type: opaque bytes

    m.properties.content_type = "application/json";
    CHECK_FALSE(letterbox::validate_payload(m));
    m.body = "{\"enrollment\": 7"; // truncated
    CHECK(letterbox::validate_payload(m) == letterbox::errc::payload_malformed);
    m.body = std::string("\"\xff\"", 3); // a JSON string holding invalid UTF-8
    CHECK(letterbox::validate_payload(m) == letterbox::errc::payload_malformed);
    m.body.clear();
    CHECK(letterbox::validate_payload(m) == letterbox::errc::payload_malformed);

    m.properties.content_type = "Application/CloudEvents+JSON; charset=utf-8";
    CHECK(letterbox::validate_payload(m) == letterbox::errc::payload_malformed);
    m.body = "[1, 2]";
    CHECK_FALSE(letterbox::validate_payload(m));

    m.properties.content_type = "text/plain";
    m.body = "not json at all";
    CHECK_FALSE(letterbox::validate_payload(m));
}

TEST_CASE("is_json_content_type accepts application/json and +json suffixes only", "[payload]") {
    CHECK(letterbox::is_json_content_type("application/json"));
    CHECK(letterbox::is_json_content_type("APPLICATION/JSON ; charset=utf-8"));
    CHECK(letterbox::is_json_content_type("application/vnd.enrollment+json"));
    CHECK_FALSE(letterbox::is_json_content_type("application/jsonx"));
    CHECK_FALSE(letterbox::is_json_content_type("text/json-ish"));
    CHECK_FALSE(letterbox::is_json_content_type(""));
}

} // namespace unit_payload
