// The reviewer console's only script: the WebAuthn ceremonies (enroll, sign in, approve or reject),
// base64url helpers, the inbox refresh, a case page that follows its case, and times shown in the
// reviewer's own time zone. Every POST carries the page's CSRF token in X-CSRF-Token. Every sentence it
// shows comes from the server (the page's data-texts, or an answer's message): none is composed here.
"use strict";

const csrfToken = () => document.querySelector('meta[name="csrf-token"]').content;
const texts = () => JSON.parse(document.body.dataset.texts || "{}");
const language = () => document.documentElement.lang || "en";
const FOLLOW_SECONDS = 5;

function toBase64url(buffer) {
  const bytes = new Uint8Array(buffer);
  let text = "";
  for (const byte of bytes) text += String.fromCharCode(byte);
  return btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function fromBase64url(text) {
  const padded = text.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((text.length + 3) % 4);
  const raw = atob(padded);
  const bytes = new Uint8Array(raw.length);
  for (let i = 0; i < raw.length; i += 1) bytes[i] = raw.charCodeAt(i);
  return bytes.buffer;
}

async function post(url, body) {
  const response = await fetch(url, {
    method: "POST",
    credentials: "same-origin",
    headers: { "Content-Type": "application/json", "X-CSRF-Token": csrfToken() },
    body: JSON.stringify(body || {}),
  });
  let answer;
  try {
    answer = await response.json();
  } catch (error) {
    answer = { ok: false, message: texts().no_answer, code: "http_" + response.status };
  }
  return answer;
}

// One sentence for the reviewer; the code, when there is one, on a details line beside it.
function say(text, code) {
  const place = document.getElementById("ceremony-result");
  if (place) place.textContent = text;
  const detail = document.getElementById("ceremony-code");
  if (detail) {
    detail.textContent = code ? texts().code + ": " + code : "";
    detail.hidden = !code;
  }
}

function silentAuthenticator(error) {
  return { ok: false, message: texts().authenticator_silent, code: error.name };
}

function creationOptions(options) {
  return {
    ...options,
    challenge: fromBase64url(options.challenge),
    user: { ...options.user, id: fromBase64url(options.user.id) },
    excludeCredentials: (options.excludeCredentials || []).map((c) => ({ ...c, id: fromBase64url(c.id) })),
  };
}

function requestOptions(options) {
  return {
    ...options,
    challenge: fromBase64url(options.challenge),
    allowCredentials: (options.allowCredentials || []).map((c) => ({ ...c, id: fromBase64url(c.id) })),
  };
}

function credentialJSON(credential, response) {
  // PublicKeyCredential.toJSON()'s shape, with the response fields of the ceremony at hand.
  return {
    id: credential.id,
    rawId: toBase64url(credential.rawId),
    type: credential.type,
    authenticatorAttachment: credential.authenticatorAttachment,
    clientExtensionResults: credential.getClientExtensionResults(),
    response: { clientDataJSON: toBase64url(credential.response.clientDataJSON), ...response },
  };
}

function registrationJSON(credential) {
  const response = credential.response;
  return credentialJSON(credential, {
    attestationObject: toBase64url(response.attestationObject),
    transports: response.getTransports ? response.getTransports() : [],
  });
}

function assertionJSON(credential) {
  const response = credential.response;
  return credentialJSON(credential, {
    authenticatorData: toBase64url(response.authenticatorData),
    signature: toBase64url(response.signature),
    userHandle: response.userHandle ? toBase64url(response.userHandle) : null,
  });
}

async function ceremony(start, finish, startBody, make) {
  const begun = await post(start, startBody);
  if (!begun.ok) return begun;
  say(begun.message);
  let credential;
  try {
    credential = await make(begun.options);
  } catch (error) {
    return silentAuthenticator(error);
  }
  return post(finish, { ...startBody, ceremony: begun.ceremony, credential });
}

// An enrollment link is /enroll#token=...: the fragment never leaves the browser (no request line, no
// log, no Referer), so the token reaches the console only in these POST bodies. The first POST claims
// the link for this browser session; another browser that opens a copy of it is refused.
function enrollmentToken() {
  return new URLSearchParams(window.location.hash.slice(1)).get("token") || "";
}

function refuseEnrollment(button, text) {
  const place = document.getElementById("enroll-refused");
  place.textContent = text;
  place.hidden = false;
  button.hidden = true;
}

async function openEnrollment(button) {
  const token = enrollmentToken();
  if (!token) {
    refuseEnrollment(button, "This enrollment link carries no token; ask for a new one (starter.py directory enroll).");
    return;
  }
  const claimed = await post("/enroll/claim", { token });
  if (!claimed.ok) {
    refuseEnrollment(button, claimed.message);
    return;
  }
  const heading = document.getElementById("enroll-heading");
  heading.textContent = heading.textContent + " · " + claimed.subject;
  button.addEventListener("click", () => enroll(button, token));
  button.disabled = false;
}

async function enroll(button, token) {
  button.disabled = true;
  const answer = await ceremony("/enroll/options", "/enroll/finish", { token }, async (options) =>
    registrationJSON(await navigator.credentials.create({ publicKey: creationOptions(options) })),
  );
  say(answer.message, answer.code);
  if (answer.ok) {
    button.hidden = true;
    document.getElementById("enrolled-next").hidden = false;
  } else {
    button.disabled = false;
  }
}

async function signIn() {
  const answer = await ceremony("/signin/options", "/signin/finish", {}, async (options) =>
    assertionJSON(await navigator.credentials.get({ publicKey: requestOptions(options) })),
  );
  say(answer.message, answer.code);
  if (answer.ok && answer.redirect) window.location.assign(answer.redirect);
}

async function review(section, decision) {
  const caseId = section.dataset.caseId;
  const base = "/cases/" + encodeURIComponent(caseId) + "/review/";
  for (const button of section.querySelectorAll("button")) button.disabled = true;
  const begun = await post(base + "options", { decision, language: language() });
  let answer = begun;
  if (begun.ok) {
    say(begun.message);
    try {
      const credential = await navigator.credentials.get({ publicKey: requestOptions(begun.options) });
      answer = await post(base + "finish", {
        ceremony: begun.ceremony,
        credential: assertionJSON(credential),
        language: language(),
      });
    } catch (error) {
      answer = silentAuthenticator(error);
    }
  }
  say(answer.message, answer.code);
  if (answer.ok) {
    sessionStorage.setItem("console-result-" + caseId, answer.message);
    window.setTimeout(() => window.location.reload(), 1500);
  } else {
    for (const button of section.querySelectorAll("button")) button.disabled = false;
  }
}

function refreshInbox(place) {
  const seconds = Number(place.dataset.refreshSeconds || "10");
  window.setInterval(async () => {
    const response = await fetch(place.dataset.refreshUrl, { credentials: "same-origin" });
    if (response.ok) {
      place.innerHTML = await response.text();
      showTimes(place);
    }
  }, seconds * 1000);
}

// The case page asks for its case's state every few seconds and reloads when it changed: decided,
// expired, approved by another reviewer, or the service back (or gone).
function followCase(follow) {
  const caseId = follow.dataset.caseId;
  const kept = sessionStorage.getItem("console-result-" + caseId);
  if (kept) {
    sessionStorage.removeItem("console-result-" + caseId);
    say(kept);
  }
  window.setInterval(async () => {
    let state;
    try {
      const response = await fetch("/cases/" + encodeURIComponent(caseId) + "/state", { credentials: "same-origin" });
      state = await response.json();
    } catch (error) {
      return;
    }
    if (!state.signed_in) return;
    const serving = String(Boolean(state.serving));
    const changed =
      serving !== follow.dataset.serving ||
      (state.serving &&
        (state.status !== follow.dataset.status ||
          state.digest !== follow.dataset.digest ||
          String(state.approved) !== follow.dataset.approved));
    if (changed) {
      countDown(); // a proposal that ran out of time says so first, and that is what the reloaded page shows
      const key = "console-result-" + caseId;
      if (!sessionStorage.getItem(key)) sessionStorage.setItem(key, texts().case_changed);
      window.location.reload();
    }
  }, FOLLOW_SECONDS * 1000);
}

function duration(seconds) {
  const hours = Math.floor(seconds / 3600);
  const minutes = Math.floor((seconds % 3600) / 60);
  const secs = Math.floor(seconds % 60);
  const two = (n) => String(n).padStart(2, "0");
  if (language() === "zh") return hours ? hours + " 小时 " + two(minutes) + " 分" : minutes + " 分 " + two(secs) + " 秒";
  return hours ? hours + " h " + two(minutes) + " min" : minutes + " min " + two(secs) + " s";
}

// Times the server wrote in UTC, shown in the reviewer's own time zone; time left counts down, and a
// proposal whose time ran out while the page was open can no longer be approved from it.
function showTimes(root) {
  const clock = new Intl.DateTimeFormat(language() === "zh" ? "zh-CN" : "en-GB", {
    year: "numeric",
    month: "short",
    day: "numeric",
    hour: "2-digit",
    minute: "2-digit",
    timeZoneName: "short",
  });
  for (const time of root.querySelectorAll('time[data-format="clock"]')) {
    time.textContent = clock.format(new Date(time.dateTime));
  }
}

function countDown() {
  const now = Date.now();
  for (const time of document.querySelectorAll('time[data-format="left"]')) {
    const seconds = (new Date(time.dateTime).getTime() - now) / 1000;
    time.textContent = seconds > 0 ? texts().left.replace("{duration}", duration(seconds)) : texts().expired;
    const section = document.querySelector("section.decide");
    if (seconds <= 0 && time.id === "time-left" && section && !section.dataset.expired) {
      section.dataset.expired = "true";
      for (const button of section.querySelectorAll("button")) button.disabled = true;
      say(texts().proposal_expired);
      sessionStorage.setItem("console-result-" + section.dataset.caseId, texts().proposal_expired);
    }
  }
}

document.addEventListener("DOMContentLoaded", () => {
  const enrollButton = document.getElementById("enroll");
  if (enrollButton) openEnrollment(enrollButton);
  const signinButton = document.getElementById("signin");
  if (signinButton) signinButton.addEventListener("click", signIn);
  const section = document.querySelector("section.decide");
  if (section) {
    for (const button of section.querySelectorAll("button[data-decision]")) {
      button.addEventListener("click", () => review(section, button.dataset.decision));
    }
  }
  const rows = document.getElementById("inbox-rows");
  if (rows) refreshInbox(rows);
  const follow = document.getElementById("case-follow");
  if (follow) followCase(follow);
  showTimes(document);
  countDown();
  window.setInterval(countDown, 1000);
});
