#include "cli.h"

#include "support/script_text.h"

#include <cstdio>
#include <memory>
#include <mutex>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

namespace qr::cli {

namespace {

struct HeldLogs {
  bool holding = false;
  bool has_text = false; // --print-after-all dumps, which are kept after an error too
  int verbosity = 0;
  std::string text;
};

HeldLogs& held() {
  static HeldLogs h;
  return h;
}

// Writes each message to stderr, or to what is held. Locked: check builds in threads.
class StderrSink : public spdlog::sinks::base_sink<std::mutex> {
protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    // User text in a message is escaped and the line bounded here, whatever built the message.
    const std::string text = message_line(std::string_view(msg.payload.data(), msg.payload.size()));
    spdlog::details::log_msg one_line = msg;
    one_line.payload = text;
    spdlog::memory_buf_t line;
    formatter_->format(one_line, line);
    // Errors are never held: each is one line of the failure report (validate lists them all).
    if (held().holding && msg.level < spdlog::level::err)
      held().text.append(line.data(), line.size());
    else
      std::fwrite(line.data(), 1, line.size(), stderr);
  }
  void flush_() override { std::fflush(stderr); }
};

} // namespace

void setup_logging(const GlobalOptions& g) {
  auto logger = std::make_shared<spdlog::logger>("qwen-recipe", std::make_shared<StderrSink>());
  logger->set_pattern("%l: %v");
  held().verbosity = g.verbosity;
  spdlog::set_default_logger(logger);
  spdlog::set_level(g.verbosity > 0   ? spdlog::level::debug
                    : g.verbosity < 0 ? spdlog::level::err
                                      : spdlog::level::info);
}

void hold_logs() {
  held().holding = true;
}

void hold_text(const std::string& text) {
  held().text += text;
  held().has_text = true;
}

void release_logs(bool failed) {
  HeldLogs& h = held();
  if (!failed || h.verbosity > 0 || h.has_text)
    std::fwrite(h.text.data(), 1, h.text.size(), stderr);
  h = HeldLogs{false, false, h.verbosity, {}};
}

std::unique_ptr<Compiler> make_compiler(const GlobalOptions& g) {
  return std::make_unique<Compiler>(recipe_sources(g.recipes_dirs));
}

} // namespace qr::cli
