// A stand-in for the Ray dashboard's Jobs REST API on loopback (cpp-httplib server), for unit tests of the
// client and the Ray runner without Ray. Jobs in Mode::kRun really run their entry point (`sh -c`, with the
// runtime_env's env_vars) through run_child, so the entry point's markers and files are exercised; the other
// modes reproduce Ray's failure behaviours (fails to start, PENDING for ever, stopped from outside, node lost).
#pragma once

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "profile_train/tuner/process_runner.h"

namespace fake_ray {

// kIgnoresStop: the job runs for ever and every stop request is answered but never applied (a job supervisor
// that does not confirm the stop).
enum class Mode { kRun, kFailToStart, kPendingForever, kStoppedOutside, kNodeLost, kIgnoresStop };

class FakeJobsServer {
 public:
  struct Job {
    std::string state = "PENDING";
    std::string message;
    nlohmann::json request;
    std::filesystem::path log;
    int polls = 0;
    bool stop_requested = false;
    std::shared_ptr<std::atomic<bool>> kill = std::make_shared<std::atomic<bool>>(false);
    std::thread runner;
  };

  // `jobs_api`: false answers 404 on /api/version (a Ray / server without the Jobs API).
  FakeJobsServer(std::filesystem::path dir, bool jobs_api = true) : dir_(std::move(dir)), jobs_api_(jobs_api) {
    std::filesystem::create_directories(dir_);
    routes();
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ~FakeJobsServer() {
    server_.stop();
    thread_.join();
    std::vector<std::thread> threads;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto& [id, job] : jobs_) {
        job.kill->store(true);
        if (job.runner.joinable()) threads.push_back(std::move(job.runner));
      }
    }
    for (auto& t : threads) t.join();
  }

  std::string address() const { return "http://127.0.0.1:" + std::to_string(port_); }
  void set_mode(Mode m) { mode_ = m; }
  void set_nodes(nlohmann::json node_types) { node_types_ = std::move(node_types); }
  int max_running() const { return max_running_.load(); }
  int submitted() const { return submitted_.load(); }
  bool any_live() {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [id, job] : jobs_) {
      if (job.state == "PENDING" || job.state == "RUNNING") return true;
    }
    return false;
  }
  int stops() const { return stops_.load(); }
  nlohmann::json last_request() {
    std::lock_guard<std::mutex> lock(mu_);
    return last_request_;
  }

 private:
  void routes() {
    server_.Get("/api/version", [this](const httplib::Request&, httplib::Response& res) {
      if (!jobs_api_) {
        res.status = 404;
        res.set_content("404: Not Found", "text/plain");
        return;
      }
      res.set_content(R"({"version":"4","ray_version":"2.60.0","ray_commit":"fake"})", "application/json");
    });
    server_.Get("/api/cluster_status", [this](const httplib::Request&, httplib::Response& res) {
      nlohmann::json j = {{"result", true}, {"data", {{"clusterStatus", {{"loadMetricsReport", {{"nodeTypes", node_types_}}}}}}}};
      res.set_content(j.dump(), "application/json");
    });
    server_.Get("/api/jobs/", [this](const httplib::Request&, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      nlohmann::json list = nlohmann::json::array();
      for (auto& [id, job] : jobs_) list.push_back(info(id, job));
      res.set_content(list.dump(), "application/json");
    });
    server_.Post("/api/jobs/", [this](const httplib::Request& req, httplib::Response& res) {
      nlohmann::json body = nlohmann::json::parse(req.body, nullptr, false);
      if (!body.is_object() || !body.contains("entrypoint")) {
        res.status = 400;
        res.set_content("bad request", "text/plain");
        return;
      }
      const std::string id = body.value("submission_id", "raysubmit_" + std::to_string(submitted_.load() + 1));
      std::lock_guard<std::mutex> lock(mu_);
      ++submitted_;
      last_request_ = body;
      Job& job = jobs_[id];
      job.request = body;
      job.log = dir_ / (id + ".log");
      if (mode_ == Mode::kFailToStart) {
        job.state = "FAILED";
        job.message = "runtime_env setup failed: Failed to set up runtime environment.\nCould not create the conda env";
      }
      res.set_content(nlohmann::json{{"job_id", id}, {"submission_id", id}}.dump(), "application/json");
    });
    server_.Get(R"(/api/jobs/([^/]+))", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = jobs_.find(req.matches[1]);
      if (it == jobs_.end()) {
        res.status = 404;
        res.set_content("Job does not exist", "text/plain");
        return;
      }
      advance(it->first, it->second);
      res.set_content(info(it->first, it->second).dump(), "application/json");
    });
    server_.Get(R"(/api/jobs/([^/]+)/logs)", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = jobs_.find(req.matches[1]);
      if (it == jobs_.end()) {
        res.status = 404;
        return;
      }
      const std::string text = profile_train::tuner::read_tail(it->second.log, 1 << 22);
      res.set_content(nlohmann::json{{"logs", text}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                      "application/json");
    });
    server_.Post(R"(/api/jobs/([^/]+)/stop)", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = jobs_.find(req.matches[1]);
      if (it == jobs_.end()) {
        res.status = 404;
        return;
      }
      ++stops_;
      Job& job = it->second;
      job.stop_requested = true;
      // Like Ray: a PENDING job's stop waits until the job could start (never, here).
      if (job.state == "RUNNING" && mode_ != Mode::kIgnoresStop) job.kill->store(true);
      res.set_content(R"({"stopped":true})", "application/json");
    });
  }

  // Called with mu_ held at every status request: moves the job along its mode's script.
  void advance(const std::string& id, Job& job) {
    ++job.polls;
    if (job.state == "PENDING" && mode_ != Mode::kPendingForever && mode_ != Mode::kFailToStart) {
      job.state = "RUNNING";
      job.message = "Job is currently running.";
      std::vector<std::string> env;
      const nlohmann::json& vars = job.request["runtime_env"].value("env_vars", nlohmann::json::object());
      for (auto v = vars.begin(); v != vars.end(); ++v) env.push_back(v.key() + "=" + v.value().get<std::string>());
      const std::string entry = job.request["entrypoint"];
      auto kill = job.kill;
      const auto log = job.log;
      if (mode_ == Mode::kRun) {
        job.runner = std::thread([this, id, entry, env, kill, log] {
          const auto r = profile_train::tuner::run_child({"/bin/sh", "-c", entry}, env, log, 120, kill.get(), 1);
          std::lock_guard<std::mutex> lock(mu_);
          Job& j = jobs_[id];
          --running_;
          if (j.stop_requested) {
            j.state = "STOPPED";
            j.message = "Job was intentionally stopped.";
          } else if (r.exit_code == 0) {
            j.state = "SUCCEEDED";
            j.message = "Job finished successfully.";
          } else {
            j.state = "FAILED";
            j.message = "Job entrypoint command failed with exit code " + std::to_string(r.exit_code);
          }
        });
        max_running_.store(std::max(max_running_.load(), ++running_));
      }
      return;
    }
    if (job.state == "RUNNING" && mode_ == Mode::kStoppedOutside && job.polls >= 3) {
      job.state = "STOPPED";
      job.message = "Job was intentionally stopped.";
    } else if (job.state == "RUNNING" && mode_ == Mode::kNodeLost && job.polls >= 3) {
      std::ofstream(job.log) << "epoch 1 step 3\n";
      job.state = "FAILED";
      job.message = "Job supervisor actor died: the actor's node 10.0.0.7 was terminated unexpectedly";
    } else if (job.state == "RUNNING" && mode_ != Mode::kRun && mode_ != Mode::kIgnoresStop && job.stop_requested) {
      job.state = "STOPPED";
    }
  }

  nlohmann::json info(const std::string& id, const Job& job) const {
    return {{"type", "SUBMISSION"},  {"submission_id", id},        {"status", job.state},
            {"message", job.message}, {"driver_node_id", job.state == "PENDING" ? "" : "node-fake-1"},
            {"start_time", 1796124038091LL}, {"end_time", nullptr}};
  }

  std::filesystem::path dir_;
  bool jobs_api_;
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::mutex mu_;
  std::map<std::string, Job> jobs_;
  std::atomic<Mode> mode_{Mode::kRun};
  nlohmann::json node_types_ = nlohmann::json::array();
  nlohmann::json last_request_;
  std::atomic<int> submitted_{0}, stops_{0}, max_running_{0};
  int running_ = 0;
};

}  // namespace fake_ray
