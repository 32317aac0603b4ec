// SPDX-License-Identifier: BSL-1.0
// The consistent-hash exchange (`x-consistent-hash`) in the RabbitMQ model: the port of
// erlang:phash2, OTP rand's exs1024 and the plugin's jump hash, checked against values that
// Erlang/OTP 25.2.3 computed (Debian 12's, which the test broker runs on).

#include <letterbox/transport/in_memory/detail/erlang_hash.hpp>

#include <catch2/catch.hpp>

#include <array>
#include <bit>
#include <cstdint>
#include <string_view>
#include <utility>

namespace unit_transport_in_memory_consistent_hash_exchange {

using namespace std::string_view_literals;
using letterbox::in_memory::detail::exs1024;
using letterbox::in_memory::detail::jump_consistent_hash;
using letterbox::in_memory::detail::term_hash;

namespace {

// ---- golden vectors, from Erlang/OTP 25.2.3 --------------------------------------------------

// erlang:phash2(Binary).
constexpr std::array<std::pair<std::string_view, std::uint32_t>, 9> phash2_of_binaries = {{
    {""sv, 13708901},
    {"a"sv, 112802447},
    {"hello"sv, 47480723},
    {"0123456789a"sv, 73708536}, // 11, 12, 13 and 25 bytes: the tail of the 12-byte blocks
    {"0123456789ab"sv, 115360506},
    {"0123456789abc"sv, 67923675},
    {"0123456789abcdefghijklmno"sv, 116510887},
    {"\xff\x00\x80\x07"sv, 115533407},
    {"1700000000"sv, 71065017},
}};

// The bucket jump_consistent_hash(Key, N) picks, for N in `bucket_counts`.
constexpr std::array<std::uint64_t, 8> bucket_counts = {2,  3,   4,         5,
                                                        10, 100, 1'000'000, std::uint64_t{1} << 40};
struct jump_vector {
    std::string_view key;
    std::array<std::uint64_t, 8> bucket;
};
constexpr std::array<jump_vector, 15> jumps_of_keys = {{
    {""sv, {0, 0, 0, 0, 9, 45, 792163, 584470236581}},
    {"a"sv, {1, 1, 1, 1, 6, 47, 322185, 1050493375996}},
    {"b"sv, {1, 1, 1, 1, 1, 13, 182040, 535657594905}},
    {"c"sv, {1, 1, 1, 4, 4, 11, 349074, 546036366909}},
    {"hello"sv, {1, 1, 3, 3, 9, 43, 840992, 763346614500}},
    {"key-1"sv, {1, 1, 1, 1, 1, 64, 706614, 726171380351}},
    {"key-2"sv, {1, 1, 1, 1, 7, 22, 171232, 990670635780}},
    {"key-3"sv, {1, 1, 1, 1, 6, 78, 995081, 820058200713}},
    {"order-42"sv, {1, 1, 1, 1, 8, 31, 884880, 440046934007}},
    {"1"sv, {1, 2, 2, 2, 8, 76, 853597, 665499022924}},
    {"2"sv, {0, 2, 2, 2, 5, 12, 938611, 285712726065}},
    {"3"sv, {0, 2, 2, 2, 2, 87, 22061, 165015892244}},
    {"1700000000"sv, {1, 1, 1, 1, 5, 45, 310542, 356900455646}},
    {"c-1"sv, {0, 0, 0, 0, 5, 59, 669524, 769864519932}},
    {"c-2"sv, {0, 2, 2, 2, 9, 41, 275922, 482236626273}},
}};

std::uint32_t phash2_of(std::string_view bytes) {
    term_hash h;
    h.binary(bytes);
    return h.phash2();
}

} // namespace

TEST_CASE("the ports of phash2, exs1024 and jump hash give what Erlang/OTP 25 computes",
          "[transport][in_memory][consistent_hash]") {
    for (const auto& [bytes, want] : phash2_of_binaries) {
        INFO("binary of " << bytes.size() << " bytes");
        CHECK(phash2_of(bytes) == want);
    }
    for (const auto& [name, want] : {std::pair{"undefined", 45914356U}, {"true", 506293U}}) {
        term_hash h;
        h.atom(name);
        CHECK(h.phash2() == want);
    }
    // rand:seed_s(exs1024, {5, 5, 5}): the state's first and last words, then 20 draws of
    // rand:uniform_s as the bits of the doubles.
    exs1024 g(5);
    CHECK(g.word(0) == 17873131353354250451ULL);
    CHECK(g.word(7) == 6294966190838202859ULL);
    CHECK(g.word(15) == 2294903908738986871ULL);
    constexpr std::array<std::uint64_t, 20> draws = {
        4600020632248023258, 4604218229866387002, 4597034157637349647, 4605317790462675456,
        4605031877554038531, 4603704726675175887, 4602906532830057007, 4581756248542184147,
        4594743424209928846, 4605734172182427626, 4594147534707235297, 4603102297162403560,
        4603435605513830273, 4592906915564865752, 4602134083463354772, 4604434112822581498,
        4600653994122964676, 4604997944148621766, 4601592579195280992, 4595225639996459938};
    for (std::size_t i = 0; i < draws.size(); ++i) {
        INFO("draw " << i);
        CHECK(std::bit_cast<std::uint64_t>(g.uniform()) == draws[i]);
    }

    for (const auto& [key, buckets] : jumps_of_keys) {
        INFO("key '" << key << "'");
        for (std::size_t i = 0; i < bucket_counts.size(); ++i) {
            INFO(bucket_counts[i] << " buckets");
            CHECK(jump_consistent_hash(phash2_of(key), bucket_counts[i]) == buckets[i]);
        }
        CHECK(jump_consistent_hash(phash2_of(key), 1) == 0);
    }
    term_hash undefined;
    undefined.atom("undefined");
    CHECK(jump_consistent_hash(undefined.phash2(), 3) == 1);
    CHECK(jump_consistent_hash(undefined.phash2(), 100) == 39);
}

} // namespace unit_transport_in_memory_consistent_hash_exchange
