/*
 * The sandbox host: plays the loan application that frames the partner UI.
 *
 * It answers the guest library's postMessage protocol the way the host does
 * (../shared/notes/host-js-api-protocol.md): object:get gets the descriptor of
 * "transaction", object:invoke runs getOrigin / refreshOrigin / create / close /
 * openResource (offered while its box is ticked: a host may have no document
 * list) and answers {type: "value", value}, failures go back as
 * exception strings. Messages are only accepted from the frame we created and
 * from the partner UI's origin. Origins and transactions come from the
 * sandbox's host-side JSON API. Every message is written to a visible log.
 */
(function () {
  "use strict";

  var root = document.getElementById("host");
  var cfg = root.dataset;
  var GUEST_URL = new URL(cfg.uiUrl, window.location.href);
  var GUEST_ORIGIN = GUEST_URL.origin;
  var API = cfg.hostApiUrl;
  var SOURCE = "elli:remoting";

  var state = {
    context: { users: [], loans: [], products: [], transactions: [] },
    frame: null,
    frameWin: null,
    origin: null,         // {id, partnerAccessToken, transactionId?} handed to the guest
    launch: null,         // {user_id, loan_id, product_id}
    connected: false
  };

  function $(id) { return document.getElementById(id); }

  function el(tag, attrs, text) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (name) { node.setAttribute(name, String(attrs[name])); });
    if (text !== undefined && text !== null) { node.textContent = String(text); }
    return node;
  }

  // ---- log ---------------------------------------------------------------------

  function masked(value) {
    return JSON.stringify(value, function (key, item) {
      if (key === "partnerAccessToken" && typeof item === "string") { return item.slice(0, 4) + "…"; }
      return item;
    });
  }

  function log(kind, text, body) {
    var item = el("li", { "class": kind });
    var time = new Date().toISOString().slice(11, 19);
    item.appendChild(el("span", { "class": "time" }, time + " "));
    item.appendChild(el("span", { "class": "dir" }, kind));
    item.appendChild(el("span", { "class": "text" }, " " + text + (body === undefined ? "" : " " + masked(body))));
    $("log").appendChild(item);
    $("log").scrollTop = $("log").scrollHeight;
  }

  function status(text, isError) {
    $("host-status").textContent = text;
    $("host-status").classList.toggle("error", Boolean(isError));
  }

  // ---- the sandbox's host-side API -------------------------------------------------

  function api(method, path, body) {
    var options = { method: method, headers: { "Accept": "application/json" }, credentials: "same-origin" };
    if (body !== undefined) {
      options.headers["Content-Type"] = "application/json";
      options.body = JSON.stringify(body);
    }
    return fetch(API + path, options).then(function (response) {
      return response.text().then(function (text) {
        var data = null;
        try { data = text ? JSON.parse(text) : null; } catch (e) { data = null; }
        if (!response.ok) {
          var detail = data && (data.message || data.detail || data.error) ? (data.message || data.detail || data.error) : text.slice(0, 200);
          throw new Error(method + " " + path + " answered HTTP " + response.status + (detail ? ": " + detail : ""));
        }
        return data;
      });
    });
  }

  function contextLoad() {
    return api("GET", "context").then(function (context) {
      state.context = context;
      renderContext();
      status("Ready. Pick a user, a loan and a product, then open a new order.");
    }).catch(function (error) {
      status("Could not load the sandbox data: " + error.message + ". Run `python manage.py sandbox_seed` and reload.", true);
    });
  }

  function fill(select, items, label, keep) {
    var previous = keep ? select.value : null;
    select.textContent = "";
    items.forEach(function (item) { select.appendChild(el("option", { value: item.id }, label(item))); });
    if (previous && items.some(function (item) { return String(item.id) === previous; })) { select.value = previous; }
  }

  function personName(person) {
    if (!person) { return ""; }
    return [person.firstName, person.lastName].filter(Boolean).join(" ") || person.name || "";
  }

  function renderContext() {
    var context = state.context;
    fill($("user"), context.users, function (user) {
      return (user.name || user.username) + " (" + (user.username || user.id) + ")" + (user.has_credentials ? "" : ", no credentials");
    }, true);
    fill($("loan"), context.loans, function (loan) {
      var property = loan.property || {};
      return [loan.loanNumber || loan.guid, personName(loan.borrower), [property.city, property.state].filter(Boolean).join(", ")]
        .filter(Boolean).join(" · ");
    }, true);
    fill($("product"), context.products, function (product) { return product.listingName || product.name; }, true);

    var body = $("transactions");
    body.textContent = "";
    (context.transactions || []).forEach(function (row) {
      var tr = el("tr", { "data-transaction-id": row.id });
      tr.appendChild(el("td", {}, row.id));
      tr.appendChild(el("td", {}, row.product));
      tr.appendChild(el("td", {}, row.loan));
      tr.appendChild(el("td", {}, row.status));
      var cell = el("td", {});
      var button = el("button", { type: "button", "aria-label": "Open transaction " + row.id }, "Open");
      button.addEventListener("click", function () { openTransaction(row); });
      cell.appendChild(button);
      tr.appendChild(cell);
      body.appendChild(tr);
      if ((row.patches || []).length) { body.appendChild(patchesRow(row)); }
    });
  }

  // Under a transaction: each PATCH of its response as the partner sent it (number, time, status,
  // what the lender reads, documents, loan fields), in a row of its own so the columns stay narrow.
  function patchesRow(row) {
    var tr = el("tr", { "class": "patches", "data-patches-of": row.id });
    var cell = el("td", { colspan: 5 });
    cell.appendChild(el("span", { "class": "muted" }, "Response PATCHes:"));
    var list = el("ol", { "class": "patches" });
    row.patches.forEach(function (patch) {
      var parts = ["#" + patch.number, patch.created.slice(11, 19), patch.status || "(no status)"];
      if (patch.partnerStatus) { parts.push("\u201c" + patch.partnerStatus + "\u201d"); }
      if (patch.resources.length) { parts.push(patch.resources.length + " document(s): " + patch.resources.join(", ")); }
      if (patch.loan.length) { parts.push("loan " + patch.loan.join(", ")); }
      list.appendChild(el("li", { "data-patch-number": patch.number }, parts.join(" \u00b7 ")));
    });
    cell.appendChild(list);
    tr.appendChild(cell);
    return tr;
  }

  function productIdByName(name) {
    var match = state.context.products.filter(function (product) { return product.name === name; })[0];
    return match ? match.id : $("product").value;
  }

  // ---- origins and the frame -----------------------------------------------------------

  function originShow() {
    var origin = state.origin;
    $("origin-info").textContent = origin
      ? "Origin " + origin.id + (origin.transactionId ? " for transaction " + origin.transactionId : " for a new order") +
        ", issued " + new Date().toISOString().slice(11, 19) + " UTC."
      : "No origin yet.";
    $("expire-origin").disabled = !origin;
  }

  function launch(launchArgs, transactionId) {
    var body = { user_id: launchArgs.user_id, loan_id: launchArgs.loan_id, product_id: launchArgs.product_id };
    if (transactionId) { body.transaction_id = transactionId; }
    status("Creating an origin…");
    return api("POST", "origins", body).then(function (origin) {
      state.launch = launchArgs;
      state.origin = { id: origin.id, partnerAccessToken: origin.partnerAccessToken, transactionId: origin.transactionId || transactionId || null };
      log("note", "origin created", state.origin);
      originShow();
      frameOpen();
      status(transactionId ? "Transaction " + transactionId + " opened in the partner panel." : "New order opened in the partner panel.");
    }).catch(function (error) {
      status("Could not open the partner page: " + error.message, true);
      log("error", error.message);
    });
  }

  function openNew(event) {
    event.preventDefault();
    launch({ user_id: Number($("user").value) || $("user").value, loan_id: Number($("loan").value) || $("loan").value, product_id: $("product").value });
  }

  function openTransaction(row) {
    launch({
      user_id: row.user_id !== undefined ? row.user_id : (Number($("user").value) || $("user").value),
      loan_id: row.loan_id !== undefined ? row.loan_id : (Number($("loan").value) || $("loan").value),
      product_id: productIdByName(row.product)
    }, row.id);
  }

  function frameOpen() {
    frameClose(true);
    var frame = el("iframe", { title: "Partner order panel", src: GUEST_URL.href, name: "partner-panel" });
    state.connected = false;
    $("frame-holder").textContent = "";
    $("frame-holder").appendChild(frame);
    state.frame = frame;
    state.frameWin = frame.contentWindow;
    $("close-frame").disabled = false;
    log("note", "frame opened " + GUEST_URL.href);
  }

  function frameClose(quiet) {
    if (state.frame) {
      state.frame.remove();
      state.frame = null;
      state.frameWin = null;
      if (!quiet) {
        $("frame-holder").appendChild(el("p", { "class": "muted" }, "The partner panel was closed."));
        log("note", "frame closed");
      }
    }
    $("close-frame").disabled = !state.frame;
  }

  function expireOrigin() {
    if (!state.origin) { return; }
    var id = state.origin.id;
    api("POST", "origins/" + encodeURIComponent(id) + "/expire").then(function () {
      log("note", "origin " + id + " expired on demand");
      status("Origin " + id + " expired. The partner page should renew it with refreshOrigin.");
    }).catch(function (error) {
      status("Could not expire the origin: " + error.message, true);
    });
  }

  // ---- the "transaction" object the guest asks for ---------------------------------------

  var objects = {
    transaction: {
      functions: {
        getOrigin: function () {
          if (!state.origin) { throw new Error("No origin: open the page from the host."); }
          var value = { id: state.origin.id, partnerAccessToken: state.origin.partnerAccessToken };
          if (state.origin.transactionId) { value.transactionId = state.origin.transactionId; }
          return value;
        },
        refreshOrigin: function () {
          if (!state.origin) { throw new Error("No origin to refresh."); }
          return api("POST", "origins/" + encodeURIComponent(state.origin.id) + "/refresh").then(function (fresh) {
            var transactionId = state.origin.transactionId;
            state.origin = { id: fresh.id, partnerAccessToken: fresh.partnerAccessToken, transactionId: fresh.transactionId || transactionId || null };
            originShow();
            var value = { id: state.origin.id, partnerAccessToken: state.origin.partnerAccessToken };
            if (state.origin.transactionId) { value.transactionId = state.origin.transactionId; }
            return value;
          });
        },
        create: function (params) {
          if (!state.origin) { throw new Error("No origin: open the page from the host."); }
          var request = params && params.request ? params.request : (params || {});
          return api("POST", "transactions", { origin_id: state.origin.id, request: request }).then(function (created) {
            state.origin.transactionId = created.transactionId;
            originShow();
            status("Transaction " + created.transactionId + " created.");
            contextLoad();
            return { transactionId: created.transactionId };
          });
        },
        close: function () {
          // Answer first, then remove the frame.
          window.setTimeout(function () { frameClose(false); state.origin = null; originShow(); }, 0);
          return true;
        },
        openResource: function (resource) {
          if (!resource || !resource.id) { throw new Error("Which document? An id is required."); }
          var url = cfg.resourceUrl.replace("RESOURCE_ID", encodeURIComponent(resource.id));
          var item = el("li", { "data-resource-id": resource.id });
          var link = el("a", { href: url, target: "_blank", rel: "noopener" }, resource.name || resource.id);
          item.appendChild(link);
          item.appendChild(el("span", { "class": "muted" }, " " + (resource.mimeType || "")));
          $("documents").appendChild(item);
          status("Document " + (resource.name || resource.id) + " opened in the host's document list.");
          return { opened: true };
        }
      },
      events: []
    }
  };

  // The functions the host offers; openResource only while the page's box says this host has a document list.
  function descriptor(objectId) {
    var object = objects[objectId];
    var functions = Object.keys(object.functions).filter(function (name) {
      return name !== "openResource" || $("offers-open-resource").checked;
    });
    return { type: "object", object: { objectId: objectId, functions: functions, events: object.events } };
  }

  function post(target, message) {
    log("out", message.type + (message.requestId ? " #" + message.requestId : ""), message.body);
    target.postMessage(message, GUEST_ORIGIN === "null" ? "*" : GUEST_ORIGIN);
  }

  function respond(target, requestId, body) {
    post(target, { source: SOURCE, type: "elli:remoting:response", requestId: requestId, body: body });
  }

  function fail(target, requestId, error) {
    var text = typeof error === "string" ? error : (error && error.message) || String(error);
    post(target, { source: SOURCE, type: "elli:remoting:exception", requestId: requestId, body: text });
  }

  function onMessage(event) {
    // Only the frame we opened, and only from the partner UI's origin: the guest checks nothing itself.
    if (!state.frameWin || event.source !== state.frameWin) { return; }
    if (event.origin !== GUEST_ORIGIN) {
      log("drop", "message from unexpected origin " + event.origin);
      return;
    }
    var data = event.data;
    if (!data || typeof data !== "object" || data.source !== SOURCE) { return; }
    var target = event.source;
    log("in", data.type + (data.requestId ? " #" + data.requestId : ""), data.body);

    if (data.type === "guest:ready") {
      state.connected = true;
      post(target, { source: SOURCE, type: "host:config", body: { logLevel: 3 } });
      return;
    }
    if (data.type === "guest:readyComplete") { return; }
    var body = data.body || {};
    if (data.type === "object:get") {
      if (!state.connected) { log("note", "object:get before guest:ready: the guest did not call connect()"); }
      if (objects[body.objectId]) { respond(target, data.requestId, descriptor(body.objectId)); }
      else { fail(target, data.requestId, "Unknown object: " + body.objectId); }
      return;
    }
    if (data.type === "object:invoke") {
      var object = objects[body.objectId];
      var fn = object && object.functions[body.functionName];
      if (!fn) { fail(target, data.requestId, "Unknown function: " + body.objectId + "." + body.functionName); return; }
      Promise.resolve()
        .then(function () { return fn.apply(null, Array.isArray(body.functionParams) ? body.functionParams : []); })
        .then(function (value) { respond(target, data.requestId, { type: "value", value: value }); })
        .catch(function (error) { log("error", body.functionName + " failed: " + error.message); fail(target, data.requestId, error); });
    }
  }

  // The listener goes in before any frame exists, so guest:ready is never missed.
  window.addEventListener("message", onMessage);
  $("launch-form").addEventListener("submit", openNew);
  $("expire-origin").addEventListener("click", expireOrigin);
  $("close-frame").addEventListener("click", function () { frameClose(false); });
  $("reload-context").addEventListener("click", contextLoad);
  $("clear-log").addEventListener("click", function () { $("log").textContent = ""; });
  contextLoad();
})();
