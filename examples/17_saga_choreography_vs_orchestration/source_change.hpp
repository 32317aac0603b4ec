// SPDX-License-Identifier: BSL-1.0
//
// How example 17 measures what the e-mail step changes: from marks in its own sources. Both
// versions of each style are in the same files, so that one program runs both (the switch is
// `email_step`, service.hpp). The marks end a line:
//
//   `// +email`  the line is only in the version with the e-mail step;
//   `// -email`  the line is only in the version without it;
//   `// ?email`  the line is the switch itself: it is in neither version, and the lines under it
//                that are indented deeper move one level (4 spaces) out.
//
// A line `// +email: ...` of its own makes the whole file new with the e-mail step. From these
// marks `measure` counts the files and the lines that the step touches, and `unified_diff`
// writes the change as `diff -u` shows it: email_step.*.diff are made by `--write-diffs`.
#pragma once

#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace example {

/// One source file, as lines.
struct source_file {
    std::string path; // relative to the example's folder
    std::vector<std::string> lines;
};

/// The files in `folder` (a style's), sorted by name; none when it cannot be read.
inline std::vector<source_file> read_sources(const std::filesystem::path& folder) {
    std::vector<source_file> files;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(folder, ec)) {
        std::ifstream in(entry.path());
        source_file f{entry.path().generic_string(), {}};
        for (std::string line; std::getline(in, line);)
            f.lines.push_back(line);
        files.push_back(std::move(f));
    }
    std::sort(files.begin(), files.end(),
              [](const auto& a, const auto& b) { return a.path < b.path; });
    return files;
}

/// One line of a file's change: ' ' in both versions, '+' only with the e-mail step, '-' only
/// without it.
struct change_line {
    char op;
    std::string text;
};

namespace detail {
inline bool ends_with_mark(std::string_view line, std::string_view mark) {
    while (!line.empty() && line.back() == ' ')
        line.remove_suffix(1);
    return line.ends_with(mark);
}
inline std::string without_mark(std::string_view line) {
    line = line.substr(0, line.rfind("//"));
    while (!line.empty() && line.back() == ' ')
        line.remove_suffix(1);
    return std::string(line);
}
inline std::size_t indent_of(std::string_view line) {
    return std::min(line.find_first_not_of(' '), line.size());
}
} // namespace detail

/// `f` as its change: the marks taken off, the switch's lines dropped.
inline std::vector<change_line> change_of(const source_file& f) {
    const bool is_new = std::any_of(f.lines.begin(), f.lines.end(), [](const std::string& l) {
        return l.starts_with("// +email:");
    });
    std::vector<change_line> out;
    std::size_t under_switch = std::string::npos; // the indent of the switch line above, if any
    for (const auto& line : f.lines) {
        if (is_new) {
            if (!line.starts_with("// +email:"))
                out.push_back({'+', line});
            continue;
        }
        if (detail::ends_with_mark(line, "// ?email")) {
            under_switch = detail::indent_of(line);
            continue;
        }
        std::string text = line;
        if (under_switch != std::string::npos) {
            if (!line.empty() && detail::indent_of(line) > under_switch)
                text.erase(0, 4);
            else
                under_switch = std::string::npos;
        }
        if (detail::ends_with_mark(line, "// +email"))
            out.push_back({'+', detail::without_mark(text)});
        else if (detail::ends_with_mark(line, "// -email"))
            out.push_back({'-', detail::without_mark(text)});
        else
            out.push_back({' ', text});
    }
    return out;
}

/// What the e-mail step touches in a set of files.
struct change_measure {
    int files = 0;     // files it touches, new ones included
    int new_files = 0; // files it adds
    int added = 0;     // lines only the version with the step has
    int removed = 0;   // lines only the version without it has
};

inline change_measure measure(const std::vector<source_file>& files) {
    change_measure m;
    for (const auto& f : files) {
        const auto lines = change_of(f);
        const auto added = std::count_if(lines.begin(), lines.end(),
                                         [](const change_line& l) { return l.op == '+'; });
        const auto removed = std::count_if(lines.begin(), lines.end(),
                                           [](const change_line& l) { return l.op == '-'; });
        if (added + removed == 0)
            continue;
        ++m.files;
        m.new_files += removed == 0 && static_cast<std::size_t>(added) == lines.size() ? 1 : 0;
        m.added += static_cast<int>(added);
        m.removed += static_cast<int>(removed);
    }
    return m;
}

namespace detail {
// A hunk's range in one version: `start,length`, or `start` alone when the length is 1; an empty
// range starts at the line before it.
inline std::string hunk_range(std::size_t first, std::size_t length) {
    if (length == 1)
        return std::to_string(first);
    return std::to_string(length == 0 ? first - 1 : first) + "," + std::to_string(length);
}
} // namespace detail

/// The change of `files` as a unified diff with 3 lines of context, as `diff -u` writes it,
/// paths relative to the example's folder.
inline std::string unified_diff(const std::vector<source_file>& files) {
    constexpr std::size_t context = 3;
    std::ostringstream out;
    for (const auto& f : files) {
        const auto lines = change_of(f);
        const bool is_new = std::all_of(lines.begin(), lines.end(),
                                        [](const change_line& l) { return l.op == '+'; });
        if (std::all_of(lines.begin(), lines.end(),
                        [](const change_line& l) { return l.op == ' '; }))
            continue;
        out << "--- " << (is_new ? "/dev/null" : "a/" + f.path) << "\n+++ b/" << f.path << '\n';
        // before[i], after[i]: the line numbers, in each version, of the first line at or after i.
        std::vector<std::size_t> before{1}, after{1};
        for (const auto& l : lines) {
            before.push_back(before.back() + (l.op != '+' ? 1 : 0));
            after.push_back(after.back() + (l.op != '-' ? 1 : 0));
        }
        for (std::size_t i = 0; i < lines.size();) {
            if (lines[i].op == ' ') {
                ++i;
                continue;
            }
            // A hunk: this change, the changes at most two contexts after it, and a context
            // on either side.
            const std::size_t first = i >= context ? i - context : 0;
            std::size_t last_change = i;
            for (std::size_t j = i; j < lines.size() && j - last_change <= 2 * context + 1; ++j)
                if (lines[j].op != ' ')
                    last_change = j;
            const std::size_t end = std::min(lines.size(), last_change + 1 + context);
            out << "@@ -" << detail::hunk_range(before[first], before[end] - before[first]) << " +"
                << detail::hunk_range(after[first], after[end] - after[first]) << " @@\n";
            for (std::size_t j = first; j < end; ++j)
                out << lines[j].op << lines[j].text << '\n';
            i = end;
        }
    }
    return out.str();
}

/// The text of the file at `path`, or nothing when it cannot be read.
inline std::string file_text(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

} // namespace example
