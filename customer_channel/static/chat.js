// The web chat page: demo sign-in, a conversation, its transcript and its live progress.
// Every text from the customer, the model or the service goes into the page with textContent, never
// as markup. EventSource cannot send an Authorization header, so the progress stream is read with
// fetch() and a ReadableStream, and Last-Event-ID is sent by hand. The case id, the last event id and
// the progress shown so far are kept in sessionStorage: after a reload the page reads the transcript
// again and resumes the stream after the last event it showed.
"use strict";

const KEYS = { subject: "chat.subject", name: "chat.name", caseId: "chat.case_id", last: "chat.last_event_id", items: "chat.progress" };
const KEPT_ITEMS = 200;
const RECONNECT_MS = 2000;
const ENDED = new Set(["completed", "needs_input", "needs_human", "rejected", "expired", "withdrawn", "failed"]);
const LANGUAGE = (navigator.language || "en").toLowerCase().startsWith("zh") ? "zh" : "en";
const W = CHAT_WORDS[LANGUAGE];  // words.js

const $ = (id) => document.getElementById(id);
let stream = null;
let ended = false;
let awaiting = null;  // the digest of the action proposal that waits for this customer's yes

function store(key, value) {
  if (value === null || value === undefined) sessionStorage.removeItem(key);
  else sessionStorage.setItem(key, String(value));
}
function lastEventId() {
  const text = sessionStorage.getItem(KEYS.last);
  return text === null ? null : Number(text);
}
function keptItems() {
  try { return JSON.parse(sessionStorage.getItem(KEYS.items) || "[]"); } catch (_) { return []; }
}

function say(text) { $("problem").textContent = text || ""; }

async function answerOf(response) {
  try { return await response.json(); } catch (_) { return {}; }
}
async function refusalOf(response) {
  const body = await answerOf(response);
  return body.message || W.answered(response.status);
}

async function postJson(url, body, token) {
  const headers = { "Content-Type": "application/json" };
  if (token) headers.Authorization = `Bearer ${token}`;
  return fetch(url, { method: "POST", headers, body: JSON.stringify(body) });
}

// A fresh credential for every request: the demo sign-in signs a built-in applicant token for this
// customer and case (valid a few minutes). A real login would hand the page its own token instead.
async function credential(caseId) {
  const subject = sessionStorage.getItem(KEYS.subject);
  const body = caseId ? { subject, case_id: caseId } : { subject };
  const response = await postJson("/demo/token", body);
  if (!response.ok) throw new Error(await refusalOf(response));
  return response.json();
}

function showSignedIn() {
  const subject = sessionStorage.getItem(KEYS.subject);
  $("sign-in").hidden = Boolean(subject);
  $("chat").hidden = !subject;
  $("sign-out").hidden = !subject;
  $("who").textContent = subject ? W.signedInAs(sessionStorage.getItem(KEYS.name)) : "";
}

function showStatus(status) {
  ended = ENDED.has(status);
  if (ended || status !== "waiting_approval") awaiting = null;
  $("case-status").textContent = awaiting ? W.awaitingYou : W.status[status] || status;
  $("confirm").hidden = !awaiting;
  $("case-status").dataset.status = status;
  $("send").disabled = ended;
  if (ended) $("message").placeholder = W.closedPlaceholder;
}

function renderTranscript(view) {
  const list = $("transcript");
  list.replaceChildren();
  for (const entry of view.entries) {
    const item = document.createElement("li");
    item.className = entry.speaker;
    item.dataset.seq = entry.seq;
    const who = document.createElement("p");
    who.className = "said-by";
    const when = new Date(entry.at).toLocaleTimeString();
    who.textContent = `${entry.speaker === "customer" ? W.you : W.support} · ${when}`;
    const text = document.createElement("p");
    text.className = "text";
    text.textContent = entry.text;
    item.append(who, text);
    list.append(item);
  }
  awaiting = view.awaiting_confirmation || null;
  showStatus(view.status);
}

function renderItem(offset, item) {
  const list = $("progress");
  if (list.querySelector(`li[data-offset="${offset}"]`)) return;  // never the same item twice
  const row = document.createElement("li");
  row.dataset.offset = offset;
  row.dataset.kind = item.kind;
  const when = document.createElement("span");
  when.className = "when";
  when.textContent = new Date(item.at).toLocaleTimeString();
  const text = document.createElement("span");
  text.className = "text";
  text.textContent = item.text;  // written by code in the case's language; a waiting item names its time
  if (item.until) {
    row.dataset.until = item.until;
    row.title = new Date(item.until).toLocaleString();
  }
  row.append(when, text);
  list.append(row);
}

function keep(offset, item) {
  const items = keptItems().filter((kept) => kept.offset !== offset);
  items.push({ offset, item });
  store(KEYS.items, JSON.stringify(items.slice(-KEPT_ITEMS)));
  store(KEYS.last, offset);
}

async function readTranscript() {
  const caseId = sessionStorage.getItem(KEYS.caseId);
  if (!caseId) return;
  const { token } = await credential(caseId);
  const response = await fetch(`/v1/conversations/${encodeURIComponent(caseId)}`, {
    headers: { Authorization: `Bearer ${token}` },
  });
  if (!response.ok) { say(await refusalOf(response)); return; }
  renderTranscript(await response.json());
}

// One Server-Sent Events block: its id, event name and data (comments and retry lines ignored).
function parseBlock(block) {
  const event = { id: null, name: "message", data: [] };
  for (const line of block.split("\n")) {
    if (!line || line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
    if (field === "id") event.id = value;
    else if (field === "event") event.name = value;
    else if (field === "data") event.data.push(value);
  }
  return event;
}

async function onEvent(event) {
  if (event.name === "progress") {
    const offset = Number(event.id);
    const last = lastEventId();
    if (last !== null && offset <= last) return;
    const item = JSON.parse(event.data.join("\n"));
    renderItem(offset, item);
    keep(offset, item);
    showStatus(item.status);
    if (item.kind === "reply" || item.kind === "receipt" || item.kind === "withdrawn" || item.kind === "closed") {
      await readTranscript();
    }
  } else if (event.name === "end") {
    const data = JSON.parse(event.data.join("\n"));
    ended = true;
    $("stream-state").textContent = W.ended;
    await readTranscript();
    showStatus(data.status);
  } else if (event.name === "unavailable") {
    $("stream-state").textContent = JSON.parse(event.data.join("\n")).message;
  }
}

async function follow() {
  const caseId = sessionStorage.getItem(KEYS.caseId);
  if (!caseId || stream) return;
  const controller = new AbortController();
  stream = controller;
  try {
    while (!controller.signal.aborted && !ended) {
      try {
        const { token } = await credential(caseId);
        const headers = { Authorization: `Bearer ${token}`, Accept: "text/event-stream" };
        const last = lastEventId();
        if (last !== null) headers["Last-Event-ID"] = String(last);
        const response = await fetch(`/v1/conversations/${encodeURIComponent(caseId)}/events`, {
          headers, signal: controller.signal,
        });
        if (!response.ok) {
          $("stream-state").textContent = await refusalOf(response);
          if (response.status < 500 && response.status !== 429) return;
        } else {
          $("stream-state").textContent = W.live;
          const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
          let buffer = "";
          for (;;) {
            const { value, done } = await reader.read();
            if (done) break;
            buffer += value.replace(/\r\n?/g, "\n");
            let cut;
            while ((cut = buffer.indexOf("\n\n")) >= 0) {
              const block = buffer.slice(0, cut);
              buffer = buffer.slice(cut + 2);
              await onEvent(parseBlock(block));
            }
          }
        }
      } catch (error) {
        if (controller.signal.aborted) return;
        $("stream-state").textContent = W.reconnecting;
      }
      if (!ended) await new Promise((resolve) => setTimeout(resolve, RECONNECT_MS));
    }
  } finally {
    if (stream === controller) stream = null;
  }
}

function forgetConversation() {
  if (stream) stream.abort();
  stream = null;
  ended = false;
  awaiting = null;
  $("confirm").hidden = true;
  for (const key of [KEYS.caseId, KEYS.last, KEYS.items]) store(key, null);
  $("transcript").replaceChildren();
  $("progress").replaceChildren();
  $("case-id").textContent = "";
  $("case-status").textContent = "";
  $("stream-state").textContent = "";
  $("send").disabled = false;
  $("message").placeholder = "";
}

async function send(text) {
  const caseId = sessionStorage.getItem(KEYS.caseId);
  if (!caseId) {
    const { token } = await credential(null);
    const response = await postJson("/v1/conversations", { text }, token);
    if (!response.ok) { say(await refusalOf(response)); return false; }
    const started = await response.json();
    store(KEYS.caseId, started.case_id);
    $("case-id").textContent = started.case_id;
    showStatus(started.status);
    await readTranscript();
    follow();
    return true;
  }
  const { token } = await credential(caseId);
  const response = await postJson(`/v1/conversations/${encodeURIComponent(caseId)}/messages`, { text }, token);
  if (!response.ok) { say(await refusalOf(response)); return false; }
  await readTranscript();
  return true;
}

// The customer's yes to the change shown above: the demo sign-in signs a confirmation over that
// proposal's digest for the signed-in customer, sent with a message that says yes; the case checks it.
async function confirmChange() {
  const caseId = sessionStorage.getItem(KEYS.caseId);
  if (!caseId || !awaiting) return;
  const subject = sessionStorage.getItem(KEYS.subject);
  const signed = await postJson("/demo/confirmation", { subject, case_id: caseId, digest: awaiting });
  if (!signed.ok) { say(await refusalOf(signed)); return; }
  const confirmation = (await signed.json()).token;
  const { token } = await credential(caseId);
  const url = `/v1/conversations/${encodeURIComponent(caseId)}/messages`;
  const response = await postJson(url, { text: W.yes, confirmation }, token);
  if (!response.ok) { say(await refusalOf(response)); return; }
  await readTranscript();
}

async function loadCustomers() {
  const response = await fetch("/demo/customers");
  if (!response.ok) {
    say(W.demoOff);
    $("sign-in-form").hidden = true;
    return;
  }
  const { customers } = await response.json();
  const select = $("customer");
  for (const customer of customers) {
    const option = document.createElement("option");
    option.value = customer.subject;
    option.textContent = `${customer.display_name} (${customer.tenant})`;
    select.append(option);
  }
}

function translatePage() {
  document.documentElement.lang = LANGUAGE;
  for (const element of document.querySelectorAll("[data-w]")) {
    const words = W[element.dataset.w];
    if (typeof words === "string") element.textContent = words;
  }
}

async function start() {
  translatePage();
  $("sign-in-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    say("");
    const response = await postJson("/demo/sign-in", { subject: $("customer").value });
    if (!response.ok) { say(await refusalOf(response)); return; }
    const customer = await response.json();
    store(KEYS.subject, customer.subject);
    store(KEYS.name, customer.display_name);
    showSignedIn();
  });
  $("sign-out").addEventListener("click", () => {
    forgetConversation();
    store(KEYS.subject, null);
    store(KEYS.name, null);
    showSignedIn();
  });
  $("new-conversation").addEventListener("click", () => { forgetConversation(); say(""); });
  $("confirm").addEventListener("click", async () => {
    say("");
    $("confirm").disabled = true;
    try { await confirmChange(); } catch (error) { say(error.message); } finally { $("confirm").disabled = false; }
  });
  $("message-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const text = $("message").value.trim();
    if (!text) return;
    say("");
    $("send").disabled = true;
    try {
      if (await send(text)) $("message").value = "";
    } catch (error) {
      say(error.message);
    } finally {
      if (!ended) $("send").disabled = false;
    }
  });
  await loadCustomers();
  showSignedIn();
  const caseId = sessionStorage.getItem(KEYS.caseId);
  if (sessionStorage.getItem(KEYS.subject) && caseId) {
    $("case-id").textContent = caseId;
    for (const kept of keptItems()) renderItem(kept.offset, kept.item);
    try { await readTranscript(); } catch (error) { say(error.message); }
    follow();
  }
}

document.addEventListener("DOMContentLoaded", start);
