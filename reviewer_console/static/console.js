// The reviewer console's only script: the WebAuthn ceremonies (enroll, sign in, approve or reject),
// base64url helpers, and the inbox refresh. Every POST carries the page's CSRF token in X-CSRF-Token.
"use strict";

const csrfToken = () => document.querySelector('meta[name="csrf-token"]').content;

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
    answer = { ok: false, message: "The console gave no answer (status " + response.status + ")." };
  }
  return answer;
}

function say(text) {
  const place = document.getElementById("ceremony-result");
  if (place) place.textContent = text;
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
    return { ok: false, message: "The authenticator did not answer: " + error.name + "." };
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
  document.getElementById("enroll-heading").textContent = "Enroll a passkey for " + claimed.subject;
  button.addEventListener("click", () => enroll(button, token));
  button.disabled = false;
}

async function enroll(button, token) {
  button.disabled = true;
  const answer = await ceremony("/enroll/options", "/enroll/finish", { token }, async (options) =>
    registrationJSON(await navigator.credentials.create({ publicKey: creationOptions(options) })),
  );
  say(answer.message);
  if (!answer.ok) button.disabled = false;
}

async function signIn() {
  const answer = await ceremony("/signin/options", "/signin/finish", {}, async (options) =>
    assertionJSON(await navigator.credentials.get({ publicKey: requestOptions(options) })),
  );
  say(answer.message);
  if (answer.ok && answer.redirect) window.location.assign(answer.redirect);
}

async function review(section, decision) {
  const caseId = section.dataset.caseId;
  const base = "/cases/" + encodeURIComponent(caseId) + "/review/";
  for (const button of section.querySelectorAll("button")) button.disabled = true;
  const begun = await post(base + "options", { decision });
  let answer = begun;
  if (begun.ok) {
    say(begun.message);
    try {
      const credential = await navigator.credentials.get({ publicKey: requestOptions(begun.options) });
      answer = await post(base + "finish", { ceremony: begun.ceremony, credential: assertionJSON(credential) });
    } catch (error) {
      answer = { ok: false, message: "The authenticator did not answer: " + error.name + "." };
    }
  }
  say(answer.message);
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
    if (response.ok) place.innerHTML = await response.text();
  }, seconds * 1000);
}

function followCase(status) {
  const caseId = (document.querySelector("h1").textContent || "").replace("Case ", "").trim();
  const kept = sessionStorage.getItem("console-result-" + caseId);
  if (kept) say(kept);
  if (status.dataset.caseStatus === "running" && kept) window.setTimeout(() => window.location.reload(), 2000);
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
  const status = document.querySelector("[data-case-status]");
  if (status) followCase(status);
});
