// SPDX-License-Identifier: BSL-1.0
#pragma once
// A headless Chromium driven over the Chrome DevTools Protocol (a WebSocket on loopback), for
// the dashboard's browser test: navigate, evaluate JavaScript, wait for a condition, take a
// screenshot of the viewport or of the whole page. Debian's `chromium` is installed (apt-get)
// when it is missing. Every wait has a deadline; the browser is killed when the object dies.

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>

#include <nlohmann/json.hpp>

#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace test_support {

/// The chromium binary, installing Debian's package first when none is on the PATH. Throws when
/// it cannot be found or installed.
inline std::string chromium_binary() {
    auto find = []() -> std::optional<std::string> {
        for (const char* name : {"chromium", "chromium-browser"}) {
            for (const char* dir : {"/usr/bin", "/usr/local/bin", "/snap/bin"}) {
                const auto p = std::filesystem::path(dir) / name;
                if (::access(p.c_str(), X_OK) == 0)
                    return p.string();
            }
        }
        return std::nullopt;
    };
    if (auto p = find())
        return *p;
    const char* sudo = ::geteuid() == 0 ? "" : "sudo ";
    const std::string install = std::string(sudo) +
                                "env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "
                                "--no-install-recommends chromium >/dev/null 2>&1 || (" +
                                sudo + "apt-get update -qq >/dev/null 2>&1 && " + sudo +
                                "env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "
                                "--no-install-recommends chromium >/dev/null 2>&1)";
    if (std::system(install.c_str()) != 0 || !find())
        throw std::runtime_error("chromium is missing and `apt-get install chromium` failed");
    return *find();
}

class headless_chromium {
public:
    using clock = std::chrono::steady_clock;

    /// Starts the browser on about:blank and connects to its page over the DevTools protocol.
    explicit headless_chromium(std::chrono::seconds startup = std::chrono::seconds(60)) {
        char tmpl[] = "/tmp/letterbox-chromium.XXXXXX";
        if (::mkdtemp(tmpl) == nullptr)
            throw std::runtime_error("mkdtemp failed");
        profile_ = tmpl;
        const auto binary = chromium_binary();
        std::vector<std::string> args = {binary,
                                         "--headless",
                                         "--no-sandbox",
                                         "--disable-gpu",
                                         "--disable-dev-shm-usage",
                                         "--no-first-run",
                                         "--hide-scrollbars",
                                         "--window-size=1280,720",
                                         "--remote-debugging-address=127.0.0.1",
                                         "--remote-debugging-port=0",
                                         "--user-data-dir=" + profile_.string(),
                                         "about:blank"};
        std::vector<char*> argv;
        for (auto& a : args)
            argv.push_back(a.data());
        argv.push_back(nullptr);
        posix_spawn_file_actions_t fa;
        ::posix_spawn_file_actions_init(&fa);
        ::posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
        const auto log = (profile_ / "chromium.log").string();
        ::posix_spawn_file_actions_addopen(&fa, 2, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        const int rc = ::posix_spawn(&pid_, binary.c_str(), &fa, nullptr, argv.data(), environ);
        ::posix_spawn_file_actions_destroy(&fa);
        if (rc != 0)
            throw std::runtime_error("cannot start " + binary);

        // Chromium writes its port and browser path to DevToolsActivePort when it listens.
        std::string port;
        const auto deadline = clock::now() + startup;
        while (port.empty()) {
            std::ifstream in(profile_ / "DevToolsActivePort");
            std::getline(in, port);
            if (!port.empty())
                break;
            if (clock::now() > deadline)
                throw std::runtime_error("chromium did not open its DevTools port (log: " + log +
                                         ")");
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        port_ = port;
        connect_page(deadline);
    }

    headless_chromium(const headless_chromium&) = delete;
    headless_chromium& operator=(const headless_chromium&) = delete;

    ~headless_chromium() {
        std::error_code ignored;
        ws_.reset();
        if (pid_ > 0) {
            ::kill(pid_, SIGKILL);
            int status = 0;
            ::waitpid(pid_, &status, 0);
        }
        std::filesystem::remove_all(profile_, ignored);
    }

    /// Sends one DevTools command and returns its `result` (throws on an `error` reply).
    nlohmann::json send(const std::string& method,
                        nlohmann::json params = nlohmann::json::object()) {
        const auto id = ++next_id_;
        nlohmann::json cmd = {{"id", id}, {"method", method}, {"params", std::move(params)}};
        ws_->write(boost::asio::buffer(cmd.dump()));
        for (int i = 0; i < 10000; ++i) { // skips the events until the reply (bounded)
            boost::beast::flat_buffer buf;
            ws_->read(buf); // the socket's receive timeout bounds each read
            auto reply = nlohmann::json::parse(boost::beast::buffers_to_string(buf.data()));
            if (!reply.contains("id") || reply["id"] != id)
                continue;
            if (reply.contains("error"))
                throw std::runtime_error(method + ": " + reply["error"].dump());
            return reply["result"];
        }
        throw std::runtime_error(method + ": no reply");
    }

    /// Loads `url` and waits until the document has loaded.
    void navigate(const std::string& url) {
        send("Page.navigate", {{"url", url}});
        wait_for("document.readyState === 'complete' && location.href === " +
                     nlohmann::json(url).dump(),
                 std::chrono::seconds(20));
    }

    /// Evaluates `expression` in the page (awaiting a promise) and returns its value.
    nlohmann::json evaluate(const std::string& expression) {
        auto r =
            send("Runtime.evaluate",
                 {{"expression", expression}, {"awaitPromise", true}, {"returnByValue", true}});
        if (r.contains("exceptionDetails"))
            throw std::runtime_error("page threw: " + r["exceptionDetails"].dump());
        return r["result"].value("value", nlohmann::json());
    }

    /// Waits until `expression` is truthy in the page; false if `timeout` passed first.
    bool wait_for(const std::string& expression, std::chrono::milliseconds timeout) {
        const auto deadline = clock::now() + timeout;
        while (clock::now() < deadline) {
            if (evaluate("!!(" + expression + ")") == true)
                return true;
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        return false;
    }

    /// A PNG of the viewport or, with `full_page`, of the whole page (as tall as its content).
    void screenshot(const std::filesystem::path& png, bool full_page = false) {
        nlohmann::json params = {{"format", "png"}};
        if (full_page) {
            const auto m = send("Page.getLayoutMetrics");
            const auto& size =
                m.contains("cssContentSize") ? m["cssContentSize"] : m["contentSize"];
            params["captureBeyondViewport"] = true;
            params["clip"] = {{"x", 0},
                              {"y", 0},
                              {"width", size.at("width")},
                              {"height", size.at("height")},
                              {"scale", 1}};
        }
        auto r = send("Page.captureScreenshot", std::move(params));
        const auto bytes = base64_decode(r.at("data").get<std::string>());
        std::ofstream out(png, std::ios::binary);
        out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
        if (!out)
            throw std::runtime_error("cannot write " + png.string());
    }

private:
    using websocket = boost::beast::websocket::stream<boost::asio::ip::tcp::socket>;

    void connect_page(clock::time_point deadline) {
        namespace http = boost::beast::http;
        // The page target's WebSocket path, from the /json/list endpoint.
        std::string path;
        while (path.empty()) {
            try {
                boost::asio::ip::tcp::socket s(io_);
                s.connect({boost::asio::ip::make_address("127.0.0.1"),
                           static_cast<unsigned short>(std::stoi(port_))});
                http::request<http::empty_body> req{http::verb::get, "/json/list", 11};
                req.set(http::field::host, "127.0.0.1:" + port_);
                http::write(s, req);
                boost::beast::flat_buffer buf;
                http::response<http::string_body> res;
                http::read(s, buf, res);
                for (const auto& t : nlohmann::json::parse(res.body())) {
                    if (t.value("type", "") == "page") {
                        const auto url = t.value("webSocketDebuggerUrl", "");
                        path = url.substr(url.find('/', std::string("ws://").size()));
                        break;
                    }
                }
            } catch (const std::exception&) {
                // not ready yet
            }
            if (path.empty()) {
                if (clock::now() > deadline)
                    throw std::runtime_error("chromium has no page target");
                std::this_thread::sleep_for(std::chrono::milliseconds(100));
            }
        }
        ws_.emplace(io_);
        auto& sock = ws_->next_layer();
        sock.connect({boost::asio::ip::make_address("127.0.0.1"),
                      static_cast<unsigned short>(std::stoi(port_))});
        timeval tv{30, 0}; // no read waits longer than this
        ::setsockopt(sock.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        ::setsockopt(sock.native_handle(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        ws_->read_message_max(64 * 1024 * 1024); // screenshots are large
        ws_->handshake("127.0.0.1:" + port_, path);
    }

    static std::string base64_decode(const std::string& in) {
        auto value = [](char c) -> int {
            if (c >= 'A' && c <= 'Z')
                return c - 'A';
            if (c >= 'a' && c <= 'z')
                return c - 'a' + 26;
            if (c >= '0' && c <= '9')
                return c - '0' + 52;
            if (c == '+')
                return 62;
            if (c == '/')
                return 63;
            return -1;
        };
        std::string out;
        std::uint32_t acc = 0;
        int bits = 0;
        for (char c : in) {
            const int v = value(c);
            if (v < 0)
                continue; // padding
            acc = (acc << 6) | static_cast<std::uint32_t>(v);
            bits += 6;
            if (bits >= 8) {
                bits -= 8;
                out += static_cast<char>((acc >> bits) & 0xFF);
            }
        }
        return out;
    }

    std::filesystem::path profile_;
    pid_t pid_ = -1;
    std::string port_;
    boost::asio::io_context io_;
    std::optional<websocket> ws_;
    std::uint64_t next_id_ = 0;
};

} // namespace test_support
