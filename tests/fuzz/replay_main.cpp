// SPDX-License-Identifier: BSL-1.0
// Replays fuzz inputs through a libFuzzer entry point without libFuzzer, so that any compiler
// (g++ with ASan and UBSan in `make test`) runs the checked-in corpus as a ctest test.
//
// usage: <replay> <file or directory>...   (directories: every regular file, in name order)
// Exits 0 after running every input; an input that breaks an oracle aborts the process.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

std::vector<std::filesystem::path> inputs(const std::filesystem::path& path) {
    std::vector<std::filesystem::path> out;
    if (std::filesystem::is_directory(path)) {
        for (const auto& entry : std::filesystem::directory_iterator(path))
            if (entry.is_regular_file())
                out.push_back(entry.path());
        std::sort(out.begin(), out.end());
    } else {
        out.push_back(path);
    }
    return out;
}

} // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::cerr << "usage: " << argv[0] << " <file or directory>...\n";
        return 2;
    }
    std::size_t count = 0;
    for (int i = 1; i < argc; ++i) {
        if (!std::filesystem::exists(argv[i])) {
            std::cerr << "no such file or directory: " << argv[i] << '\n';
            return 2;
        }
        for (const auto& file : inputs(argv[i])) {
            std::ifstream in(file, std::ios::binary);
            const std::vector<char> bytes{std::istreambuf_iterator<char>(in),
                                          std::istreambuf_iterator<char>()};
            // A copy in its own allocation, so that ASan sees reads past the input's end.
            std::vector<std::uint8_t> data(bytes.begin(), bytes.end());
            LLVMFuzzerTestOneInput(data.data(), data.size());
            ++count;
        }
    }
    std::cout << "replayed " << count << " inputs\n";
    return count == 0 ? 1 : 0;
}
