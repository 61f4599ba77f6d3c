//===- WebPage.cpp - The page kiln serve shows at / -----------------------===//
//
// Part of Kiln's server. See WebPage.h. Plain HTML, CSS and JavaScript that
// any browser of the last few years runs as is. The element ids (prompt,
// send, messages, stats) are what test/server/browser_test.py drives.
//
//===----------------------------------------------------------------------===//

#include "runtime/server/WebPage.h"

namespace kiln::runtime::server {

const char *const kWebPage = R"KILNPAGE(<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Kiln</title>
<style>
body { font: 15px/1.4 system-ui, sans-serif; margin: 0; display: flex;
       height: 100vh; color: #222; }
main { flex: 1; display: flex; flex-direction: column; padding: 1em; }
aside { width: 16em; padding: 1em; background: #f4f2ef; overflow: auto; }
#messages { flex: 1; overflow: auto; }
.msg { white-space: pre-wrap; margin: .4em 0; padding: .5em .7em;
       border-radius: 6px; }
.user { background: #e4ecf7; } .assistant { background: #f1f1f1; }
.error { background: #fbe3e3; }
form { display: flex; gap: .5em; } textarea { flex: 1; height: 3.5em; }
label { display: block; margin: .5em 0 .1em; font-size: 90%; }
aside input { width: 100%; box-sizing: border-box; }
table { width: 100%; font-size: 90%; } td:last-child { text-align: right; }
</style></head>
<body>
<main>
  <h2 style="margin:0 0 .5em">Kiln <small id="model"></small></h2>
  <div id="messages"></div>
  <form id="chat">
    <textarea id="prompt" placeholder="Say something (Enter sends)"></textarea>
    <button id="send" type="submit">Send</button>
    <button id="clear" type="button">Clear</button>
  </form>
</main>
<aside>
  <h3>Sampling</h3>
  <label>temperature <input id="temperature" type="number" value="0.8"
    min="0" max="2" step="0.05"></label>
  <label>top_p <input id="top_p" type="number" value="0.95" min="0.01"
    max="1" step="0.01"></label>
  <label>max_tokens <input id="max_tokens" type="number" value="128" min="1"
    step="1"></label>
  <label>seed (empty: random) <input id="seed" type="number"></label>
  <label>API key <input id="key" type="password"></label>
  <h3>Server</h3>
  <table id="stats"><tr><td>waiting for /metrics</td></tr></table>
</aside>
<script>
"use strict";
const $ = id => document.getElementById(id);
const history = [];

function headers() {
  const h = {"Content-Type": "application/json"};
  if ($("key").value) h["Authorization"] = "Bearer " + $("key").value;
  return h;
}

function bubble(role, text) {
  const div = document.createElement("div");
  div.className = "msg " + role;
  div.textContent = text;
  $("messages").appendChild(div);
  $("messages").scrollTop = $("messages").scrollHeight;
  return div;
}

// Streams the reply over Server-Sent Events: fetch, then the body's reader,
// split into "data: ..." lines.
async function send(text) {
  history.push({role: "user", content: text});
  bubble("user", text);
  const out = bubble("assistant", "");
  const body = {messages: history, stream: true,
                temperature: Number($("temperature").value),
                top_p: Number($("top_p").value),
                max_tokens: Number($("max_tokens").value)};
  if ($("seed").value !== "") body.seed = Number($("seed").value);
  $("send").disabled = true;
  let reply = "";
  try {
    const res = await fetch("/v1/chat/completions", {method: "POST",
      headers: headers(), body: JSON.stringify(body)});
    if (!res.ok) {
      const err = await res.json().catch(() => ({}));
      throw new Error((err.error && err.error.message) || res.statusText);
    }
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const {done, value} = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, {stream: true});
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const event = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        for (const line of event.split("\n")) {
          if (!line.startsWith("data: ")) continue;
          const data = line.slice(6);
          if (data === "[DONE]") continue;
          const chunk = JSON.parse(data);
          if (chunk.error) throw new Error(chunk.error.message);
          const delta = chunk.choices[0] && chunk.choices[0].delta;
          if (delta && delta.content) {
            reply += delta.content;
            out.textContent = reply;
          }
        }
      }
    }
    history.push({role: "assistant", content: reply});
  } catch (e) {
    out.className = "msg error";
    out.textContent = reply + " [" + e.message + "]";
    history.pop();
  } finally {
    $("send").disabled = false;
  }
}

$("chat").addEventListener("submit", ev => {
  ev.preventDefault();
  const text = $("prompt").value.trim();
  if (!text) return;
  $("prompt").value = "";
  send(text);
});
$("prompt").addEventListener("keydown", ev => {
  if (ev.key === "Enter" && !ev.shiftKey) {
    ev.preventDefault();
    $("chat").requestSubmit();
  }
});
$("clear").addEventListener("click", () => {
  history.length = 0;
  $("messages").textContent = "";
});

// Live figures: the Prometheus text of /metrics, every two seconds.
const shown = [
  ["kiln_requests_running", "running"],
  ["kiln_requests_waiting", "waiting"],
  ["kiln_generation_tokens_per_second", "tokens/s"],
  ["kiln_generation_tokens_total", "tokens generated"],
  ["kiln_kv_blocks_used", "KV blocks used"],
  ["kiln_kv_blocks_free", "KV blocks free"],
  ["kiln_preemptions_total", "preemptions"],
  ["kiln_resident_memory_bytes", "memory (MiB)"]];
async function poll() {
  try {
    const res = await fetch("/metrics", {headers: headers()});
    if (res.ok) {
      const values = {};
      for (const line of (await res.text()).split("\n")) {
        if (!line || line[0] === "#") continue;
        const i = line.lastIndexOf(" ");
        values[line.slice(0, i)] = Number(line.slice(i + 1));
      }
      $("stats").innerHTML = "";
      for (const [name, label] of shown) {
        let v = values[name];
        if (v === undefined) continue;
        if (name.endsWith("_bytes")) v = v / 1048576;
        const row = $("stats").insertRow();
        row.insertCell().textContent = label;
        row.insertCell().textContent =
          Number.isInteger(v) ? v : v.toFixed(1);
      }
    }
  } catch (e) {}
  setTimeout(poll, 2000);
}
fetch("/v1/models", {headers: headers()}).then(r => r.json())
  .then(m => { $("model").textContent = m.data[0].id; }).catch(() => {});
poll();
</script>
</body></html>
)KILNPAGE";

} // namespace kiln::runtime::server
