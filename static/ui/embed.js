/*
 * The partner UI inside the host's iframe.
 *
 * Talks to the host through the guest library (window.elli.script): connect,
 * get the "transaction" object, ask it for the origin (id, partner access token,
 * transactionId when the lender opened an existing order). Reads what to show
 * from our back-end with that origin, and renews the origin with refreshOrigin
 * shortly before it expires and whenever our back-end says it has expired.
 *
 * The origin proxy's answer carries a panel session (a short-lived signed token
 * bound to the lender, the product and the loan): the progress poll and the
 * document downloads send it instead of the origin, so an open panel costs the
 * service no call. It is renewed with the origin (refreshOrigin, then the proxy
 * again), ahead of time and whenever our back-end says it has ended.
 *
 * An existing order shows its result first (where it stands, what the partner
 * found or delivered, every document delivered), then, for a staff-worked one,
 * its timeline newest first (what the partner sent, each entry with its
 * documents). A document opens in the loan application's documents where the
 * host offers that (openResource, with the service's copy), and downloads
 * otherwise: with fetch and the panel session header, then a Blob URL, so no
 * token ever goes into an address (and so into no access log), and the page's
 * CSP needs nothing more. Whatever text says to contact the partner has the
 * partner's phone and e-mail under it.
 *
 * Every piece of loan or service data reaches the DOM through textContent or
 * attributes, never as markup.
 */
(function () {
  "use strict";

  var app = document.getElementById("app");
  var cfg = app.dataset;
  var REFRESH_AFTER_MS = Number(cfg.refreshAfterMs) || 240000;
  var POLL_MS = Number(cfg.pollMs) || 3000;
  // While a staff-worked order is with staff it changes over hours: ask less often.
  var STAFF_POLL_MS = Math.max(Number(cfg.staffPollMs) || 15000, POLL_MS);
  var HOST_TIMEOUT_MS = Number(cfg.hostTimeoutMs) || 15000;

  var STEPS = [
    { key: "requested", label: "Requested" },
    { key: "in_progress", label: "In progress" },
    { key: "delivered", label: "Delivered" },
    { key: "completed", label: "Completed" }
  ];
  var STEP_TEXT = {
    requested: "Requested: the order is waiting to be picked up.",
    in_progress: "In progress: the partner is working on the order.",
    delivered: "Delivered: the results were sent to the loan application.",
    completed: "Completed: the loan application has processed the results.",
    failed: "Failed.",
    declined: "Declined: the partner declined the order."
  };
  // How the final states are marked after the steps.
  var END_STEPS = { failed: "Failed", declined: "Declined" };
  var DATE_FORMAT = { dateStyle: "medium", timeStyle: "short" };

  var state = {
    host: null,          // the host's "transaction" proxy
    origin: null,        // {id, partnerAccessToken, transactionId?}
    renewing: null,      // the pending refreshOrigin, shared by every caller
    panel: null,         // the panel session token the origin proxy gave
    panelRenewing: null, // the pending renewal of the panel session, shared by every caller
    refreshTimer: null,
    context: null,       // what the origin proxy returned
    pollTimer: null,
    lastStep: null,
    lastDocuments: "",
    timelineIds: []      // the timeline entries on the page, in order
  };

  function $(id) { return document.getElementById(id); }

  function el(tag, attrs, text) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (name) {
      if (attrs[name] === false || attrs[name] === null || attrs[name] === undefined) { return; }
      if (attrs[name] === true) { node.setAttribute(name, ""); } else { node.setAttribute(name, String(attrs[name])); }
    });
    if (text !== undefined && text !== null) { node.textContent = String(text); }
    return node;
  }

  function announce(text) {
    var region = $("announce");
    region.textContent = "";
    // A fresh text node after a tick makes screen readers speak repeated messages too.
    window.setTimeout(function () { region.textContent = text; }, 50);
  }

  function show(sectionIds) {
    ["loading", "problem", "loan", "order", "transaction"].forEach(function (id) {
      $(id).hidden = sectionIds.indexOf(id) === -1;
    });
  }

  function setLoading(text) {
    $("loading-text").textContent = text;
    show(["loading"]);
  }

  // `link` ({href, text}), when given, follows the next step as a link.
  function showProblem(title, text, next, retry, link) {
    stopPolling();
    $("problem-title").textContent = title;
    $("problem-text").textContent = text || "";
    $("problem-next").textContent = next || "";
    if (link && link.href) {
      $("problem-next").appendChild(document.createTextNode(" "));
      $("problem-next").appendChild(el("a", { href: link.href, target: "_top" }, link.text));
      $("problem-next").appendChild(document.createTextNode("."));
    }
    var button = $("problem-retry");
    button.hidden = !retry;
    button.onclick = retry || null;
    show(["problem"]);
    contactsShow();
    app.setAttribute("data-state", "problem");
    $("problem-title").focus();
    announce(title);
  }

  // The partner's phone and e-mail under every shown text that says to contact the partner.
  function contactsShow() {
    document.querySelectorAll("[data-contact]").forEach(function (line) {
      var block = line.parentNode;
      var says = Array.prototype.some.call(block.children, function (node) {
        return node !== line && /contact/i.test(node.textContent);
      });
      line.hidden = !says;
    });
  }

  // The page's title and heading: the product's name, once the page knows it.
  function titleSet(name) {
    if (!name) { return; }
    $("title").textContent = name;
    document.title = name;
  }

  function withTimeout(promise, ms, message) {
    return new Promise(function (resolve, reject) {
      var timer = window.setTimeout(function () { reject(new Error(message)); }, ms);
      Promise.resolve(promise).then(
        function (value) { window.clearTimeout(timer); resolve(value); },
        function (error) { window.clearTimeout(timer); reject(error); }
      );
    });
  }

  function errorText(error) {
    if (!error) { return "Unknown error."; }
    if (typeof error === "string") { return error; }
    return error.message || String(error);
  }

  // ---- the host and the origin ------------------------------------------------

  function hostConnect() {
    if (!window.elli || !window.elli.script) {
      return Promise.reject(new Error("The loan application's scripting library did not load."));
    }
    window.elli.script.connect();  // installs the listener for the host's answers; getObject needs it
    return withTimeout(window.elli.script.getObject("transaction"), HOST_TIMEOUT_MS,
      "The loan application did not answer.");
  }

  function originSet(fresh) {
    var keepTransaction = state.origin && state.origin.transactionId;
    state.origin = {
      id: fresh.id,
      partnerAccessToken: fresh.partnerAccessToken,
      transactionId: fresh.transactionId || keepTransaction || null
    };
    // Origins live 300 s: renew ahead of time so no request meets an expired one.
    window.clearTimeout(state.refreshTimer);
    state.refreshTimer = window.setTimeout(function () {
      panelRenew().catch(function () { /* the next request renews again on 401 */ });
    }, REFRESH_AFTER_MS);
  }

  function originRenew() {
    if (!state.renewing) {
      state.renewing = withTimeout(state.host.refreshOrigin(), HOST_TIMEOUT_MS, "The loan application did not renew the session.")
        .then(function (fresh) {
          if (!fresh || !fresh.id || !fresh.partnerAccessToken) { throw new Error("The loan application returned no session."); }
          originSet(fresh);
          return state.origin;
        })
        .finally(function () { state.renewing = null; });
    }
    return state.renewing;
  }

  function readJson(response) {
    return response.text().then(function (text) {
      try { return text ? JSON.parse(text) : {}; } catch (e) { return {}; }
    });
  }

  // Run a request that carries the origin; on a 401 that is not about the
  // lender's credentials (those come with a "status" text), renew and run once more.
  function withOrigin(makeRequest) {
    return makeRequest(state.origin).then(function (response) {
      if (response.status !== 401) { return response; }
      return readJson(response.clone()).then(function (body) {
        if (body && typeof body.status === "string") { return response; }
        return originRenew().then(function () { return makeRequest(state.origin); });
      });
    });
  }

  // ---- the panel session -----------------------------------------------------------

  function panelSet(context) {
    state.panel = context && context.panelSession ? context.panelSession.token : null;
  }

  // A fresh origin from the host, then the proxy again: its answer holds a fresh panel session.
  function panelRenew() {
    if (!state.panelRenewing) {
      state.panelRenewing = originRenew()
        .then(function () { return fetchOriginContext(); })
        .then(function (response) {
          return readJson(response.clone()).then(function (body) {
            if (!response.ok) { return { response: response, body: body }; }
            panelSet(body);
            return null;
          });
        })
        .finally(function () { state.panelRenewing = null; });
    }
    return state.panelRenewing;
  }

  function panelHeaders(accept) {
    return { "Accept": accept || "application/json", "X-Panel-Session": state.panel || "" };
  }

  // Run a request that carries the panel session; when it has ended, renew it and run once more.
  // A renewal the proxy refuses (credentials changed meanwhile) is what the caller gets.
  function withPanel(makeRequest) {
    return makeRequest().then(function (response) {
      if (response.status !== 401) { return response; }
      return panelRenew().then(function (refused) {
        return refused ? refused.response : makeRequest();
      });
    });
  }

  function originHeaders(origin) {
    return {
      "Accept": "application/json",
      "X-Origin-Id": origin.id,
      "X-Partner-Access-Token": origin.partnerAccessToken
    };
  }

  function fetchOriginContext() {
    return withOrigin(function (origin) {
      // The token goes in a header, not the address (the proxy takes both), so no access log holds it.
      var url = cfg.originUrl.replace("ORIGIN_ID", encodeURIComponent(origin.id));
      return fetch(url, { headers: originHeaders(origin), credentials: "same-origin", cache: "no-store" });
    });
  }

  // ---- problems the back-end reports --------------------------------------------

  function showBackendProblem(response, body, retry) {
    var productName = state.context && state.context.product ? state.context.product.listingName : (body && body.product) || "this product";
    if (response.status === 401 && body && typeof body.status === "string") {
      // Trying again would send the same credentials: no button, but what to change and where. Missing
      // credentials and refused ones are told apart by the back-end, which words both.
      titleSet(body.product);
      app.setAttribute("data-credentials", body.missing ? "missing" : "refused");
      showProblem(
        body.title || "Your partner credentials were not accepted",
        body.text || body.status,
        body.next || ("Ask your administrator to correct your user name and password for " + productName +
          " in the loan application's settings, then close this page and open it again from the loan."),
        null
      );
      return;
    }
    var errors = (body && Array.isArray(body.errors)) ? body.errors : [];
    var messages = errors.map(function (item) {
      if (typeof item === "string") { return item; }
      var text = item && item.message ? item.message : "The service refused the request";
      return item && item.status ? text + " (HTTP " + item.status + ")" : text;
    });
    var codes = errors.map(function (item) { return item && item.code; });
    var title = "The order page could not be loaded";
    var next = "Try again. If it keeps failing, close this page and open it again from the loan.";
    if (codes.indexOf("loan_missing") !== -1) {
      title = "No loan data was shared with the partner";
      next = "Open this page from a saved loan. If it keeps happening, ask your administrator to check the product's data access.";
    } else if (codes.indexOf("origin_expired") !== -1 || codes.indexOf("panel_session_expired") !== -1) {
      title = "Your session with the loan application ended";
      next = "Close this page and open it again from the loan.";
    } else if (codes.indexOf("service_unavailable") !== -1) {
      title = "The service is not answering right now";
      next = "Wait a minute and try again.";
    }
    showProblem(title, messages.join(" ") || ("The partner answered HTTP " + response.status + "."), next, retry);
  }

  // ---- the loan summary -----------------------------------------------------------

  function renderSummary(context) {
    // The rows come labelled in the lender's words by the server (partner/ui/loans.py), as every
    // other page names loan fields: the page writes them as text, never as markup.
    var rows = (context.loan || {}).rows || [];
    var list = $("loan-summary");
    list.textContent = "";
    rows.forEach(function (row) {
      list.appendChild(el("dt", {}, row.label));
      list.appendChild(el("dd", {}, row.value));
    });
    var product = context.product || {};
    titleSet(product.listingName || product.name);
    var user = context.user || {};
    $("subtitle").textContent = [user.name, user.organization].filter(Boolean).join(" · ");
  }

  // ---- the new order form ---------------------------------------------------------

  function renderOrderForm(context) {
    var holder = $("order-fields");
    holder.textContent = "";
    (context.orderOptions || []).forEach(function (field) {
      var id = "option-" + field.name;
      var wrap = el("div", { "class": "field" });
      var describedBy = [];
      var control;
      var help = null;
      if (field.kind === "select") {
        control = el("select", { id: id, name: field.name });
        (field.choices || []).forEach(function (choice) {
          var option = el("option", { value: choice.value }, choice.label);
          if (String(field.initial) === String(choice.value)) { option.selected = true; }
          control.appendChild(option);
        });
      } else if (field.kind === "textarea") {
        control = el("textarea", { id: id, name: field.name, rows: 3, maxlength: field.maxLength || null });
        if (field.initial) { control.value = field.initial; }
      } else if (field.kind === "checkbox") {
        control = el("input", { id: id, name: field.name, type: "checkbox" });
        control.checked = Boolean(field.initial);
        wrap.classList.add("checkbox");
      } else {
        control = el("input", { id: id, name: field.name, type: "text", maxlength: field.maxLength || null });
        if (field.initial) { control.value = field.initial; }
      }
      if (field.required) { control.setAttribute("required", ""); control.setAttribute("aria-required", "true"); }
      var label = el("label", { "for": id }, field.label + (field.required ? " (required)" : ""));
      if (field.help) {
        help = el("p", { id: id + "-help", "class": "help" }, field.help);
        describedBy.push(help.id);
      }
      var error = el("p", { id: id + "-error", "class": "field-error", hidden: true });
      describedBy.push(error.id);
      control.setAttribute("aria-describedby", describedBy.join(" "));
      control.dataset.kind = field.kind;
      if (field.kind === "checkbox") {
        wrap.appendChild(control);
        wrap.appendChild(label);
      } else {
        wrap.appendChild(label);
        wrap.appendChild(control);
      }
      if (help) { wrap.appendChild(help); }
      wrap.appendChild(error);
      holder.appendChild(wrap);
    });
  }

  function formValues() {
    var values = {};
    $("order-fields").querySelectorAll("input, select, textarea").forEach(function (control) {
      values[control.name] = control.dataset.kind === "checkbox" ? control.checked : control.value;
    });
    return values;
  }

  function fieldErrorsClear() {
    $("order-fields").querySelectorAll(".field-error").forEach(function (node) { node.hidden = true; node.textContent = ""; });
    $("order-fields").querySelectorAll("[aria-invalid]").forEach(function (node) { node.removeAttribute("aria-invalid"); });
    $("order-error").hidden = true;
    $("order-error").textContent = "";
    $("order-again").removeAttribute("aria-invalid");
    $("order-again-error").hidden = true;
    $("order-again-error").textContent = "";
  }

  function fieldErrorsShow(fields) {
    var first = null;
    Object.keys(fields).forEach(function (name) {
      var control = $("option-" + name);
      var messages = fields[name].join(" ");
      if (!control) {
        $("order-error").textContent = messages;
        $("order-error").hidden = false;
        return;
      }
      control.setAttribute("aria-invalid", "true");
      var error = $("option-" + name + "-error");
      error.textContent = messages;
      error.hidden = false;
      first = first || control;
    });
    if (first) { first.focus(); }
  }

  function validateLocally(context) {
    var problems = {};
    (context.orderOptions || []).forEach(function (field) {
      var control = $("option-" + field.name);
      if (!control || field.kind === "checkbox") { return; }
      var value = control.value.trim();
      if (field.required && !value) { problems[field.name] = ["Enter " + field.label.toLowerCase() + "."]; }
      if (field.maxLength && value.length > field.maxLength) {
        problems[field.name] = ["Use at most " + field.maxLength + " characters (now " + value.length + ")."];
      }
    });
    return problems;
  }

  function formBusy(busy, text) {
    var button = $("order-submit");
    button.disabled = busy;
    $("order-form").setAttribute("aria-busy", busy ? "true" : "false");
    button.textContent = busy ? (text || "Placing order…") : "Place order";
  }

  function formError(text) {
    $("order-error").textContent = text;
    $("order-error").hidden = false;
    $("order-error").setAttribute("tabindex", "-1");
    $("order-error").focus();
  }

  function orderSubmit(event) {
    event.preventDefault();
    fieldErrorsClear();
    var context = state.context;
    var local = validateLocally(context);
    if (Object.keys(local).length) { fieldErrorsShow(local); return; }
    if (!$("again-field").hidden && !$("order-again").checked) {
      // Asked before the same product is ordered again for this loan.
      $("order-again").setAttribute("aria-invalid", "true");
      $("order-again-error").textContent = "This loan already has an order of this product. Tick the box to order it again, or view the earlier order above.";
      $("order-again-error").hidden = false;
      $("order-again").focus();
      announce("This loan already has an order of this product.");
      return;
    }
    formBusy(true, "Checking the order…");
    announce("Checking the order.");
    var csrf = $("order-form").querySelector("input[name=csrfmiddlewaretoken]").value;
    var payload = JSON.stringify({ options: formValues() });
    withOrigin(function (origin) {
      var headers = originHeaders(origin);
      headers["Content-Type"] = "application/json";
      headers["X-CSRFToken"] = csrf;
      return fetch(cfg.checkUrl, { method: "POST", headers: headers, body: payload, credentials: "same-origin" });
    }).then(function (response) {
      return readJson(response).then(function (body) {
        if (response.status === 400 && body.fields) {
          formBusy(false);
          fieldErrorsShow(body.fields);
          announce("The order has errors. Correct them and place the order again.");
          return null;
        }
        if (!response.ok) {
          formBusy(false);
          if (response.status === 403) {
            formError("The page's security check failed. Reload the page and place the order again.");
          } else {
            showBackendProblem(response, body, function () { start(); });
          }
          return null;
        }
        formBusy(true, "Placing order…");
        announce("Placing the order.");
        return withTimeout(state.host.create({ request: body.request }), HOST_TIMEOUT_MS * 2,
          "The loan application did not confirm the order.")
          .then(function (created) {
            if (!created || !created.transactionId) { throw new Error("The loan application returned no order number."); }
            state.origin.transactionId = created.transactionId;
            announce("Order placed.");
            showTransaction(created.transactionId);
          });
      });
    }).catch(function (error) {
      formBusy(false);
      formError("The order was not placed: " + errorText(error) + " Check your connection and place the order again.");
    });
  }

  // What one order costs and how long it takes, as the partner's staff set them for the product.
  function renderTerms(product) {
    var parts = [];
    if (product && product.fee) {
      var fee = Number(product.fee);
      parts.push("Fee: " + (isNaN(fee) ? product.fee : fee.toLocaleString("en-US", { style: "currency", currency: "USD" })) + " per order");
    }
    if (product && product.turnaroundHours) {
      var hours = Number(product.turnaroundHours);
      var days = hours >= 24 && hours % 24 === 0 ? hours / 24 : 0;
      parts.push("Expected turnaround: " + (days ? days + (days === 1 ? " day" : " days") : hours + (hours === 1 ? " hour" : " hours")));
    }
    $("order-terms").textContent = parts.join(" · ");
    $("order-terms").hidden = parts.length === 0;
  }

  // Every step's name, from the steps and the end states above.
  var STEP_NAMES = STEPS.reduce(function (names, step) { names[step.key] = step.label; return names; }, Object.assign({}, END_STEPS));

  // This loan's earlier orders of the product: each can be opened; a new one needs a confirmation.
  function renderEarlier(orders) {
    var list = $("earlier-orders");
    list.textContent = "";
    (orders || []).forEach(function (order) {
      var item = el("li", { "class": "earlier-order", "data-transaction-id": order.transactionId });
      var about = el("span", { "class": "earlier-about" });
      about.appendChild(el("strong", {}, order.referenceNumber || "Order"));
      about.appendChild(document.createTextNode(" · " + (STEP_NAMES[order.step] || order.step) + " · ordered " + timeText(order.orderedAt) + (order.orderedBy ? " by " + order.orderedBy : "")));
      item.appendChild(about);
      var button = el("button", { type: "button", "class": "button small", "aria-label": "View order " + (order.referenceNumber || order.transactionId) }, "View");
      button.addEventListener("click", function () {
        state.origin.transactionId = order.transactionId;
        showTransaction(order.transactionId);
      });
      item.appendChild(button);
      list.appendChild(item);
    });
    var any = (orders || []).length > 0;
    $("earlier-block").hidden = !any;
    $("again-field").hidden = !any;
    $("order-again").checked = false;
  }

  function showOrder(context) {
    renderTerms(context.product);
    renderEarlier(context.earlierOrders);
    renderOrderForm(context);
    app.insertBefore($("loan"), $("order"));
    show(["loan", "order"]);
    app.setAttribute("data-state", "order");
    formBusy(false);
    announce("New order. Check the loan and place the order.");
  }

  // ---- the existing transaction -----------------------------------------------------

  // Each step shows when it was reached, so a quick order's path is visible too; a failed or
  // declined order keeps the steps it reached, then says where it ended.
  function renderSteps(progress) {
    var list = $("steps");
    list.textContent = "";
    var ended = END_STEPS.hasOwnProperty(progress.step);
    var reached = {};
    (progress.steps || []).forEach(function (step) { reached[step.key] = step.reached_at; });
    var currentIndex = STEPS.map(function (s) { return s.key; }).indexOf(progress.step);
    STEPS.forEach(function (step, index) {
      var status;
      if (ended) { status = reached[step.key] ? "done" : "todo"; }
      else if (index < currentIndex || progress.step === "completed") { status = "done"; }
      else if (index === currentIndex) { status = "current"; }
      else { status = "todo"; }
      var item = el("li", { "class": "step " + status, "data-step": step.key, "aria-current": status === "current" ? "step" : null });
      item.appendChild(el("span", { "class": "marker", "aria-hidden": "true" }, status === "done" ? "✓" : String(index + 1)));
      var text = el("span", { "class": "label" }, step.label);
      item.appendChild(text);
      if (reached[step.key] && status !== "todo") {
        item.appendChild(el("span", { "class": "visually-hidden" }, ", reached "));
        item.appendChild(stepTime(reached[step.key]));
      }
      item.appendChild(el("span", { "class": "visually-hidden" }, status === "done" ? " (done)" : status === "current" ? " (current step)" : " (not yet)"));
      list.appendChild(item);
    });
    if (ended) {
      var end = el("li", { "class": "step failed", "data-step": progress.step, "aria-current": "step" });
      end.appendChild(el("span", { "class": "marker", "aria-hidden": "true" }, "!"));
      end.appendChild(el("span", { "class": "label" }, END_STEPS[progress.step]));
      if (progress.ended_at) { end.appendChild(stepTime(progress.ended_at)); }
      list.appendChild(end);
    }
    renderFailure(progress);
    $("declined").hidden = progress.step !== "declined";
    $("declined-reason").textContent = progress.step === "declined" ? (progress.reason || "The partner gave no reason.") : "";
    contactsShow();
  }

  function stepTime(iso) {
    var node = el("time", { "class": "step-time", datetime: iso }, clockText(iso));
    node.title = timeText(iso);
    return node;
  }

  // What happened and what to do, by cause, as the back-end words it for the lender.
  function renderFailure(progress) {
    var failure = progress.step === "failed" ? (progress.failure || {}) : null;
    $("failure").hidden = !failure;
    $("failure").setAttribute("data-cause", failure ? (failure.cause || "") : "");
    $("failure-title").textContent = failure ? (failure.title || "The order failed") : "";
    $("failure-reason").textContent = failure ? (failure.text || progress.reason || "") : "";
    $("failure-next").textContent = failure ? (failure.next || "") : "";
  }

  // One identifier for people: our reference, in the title. When and by whom it was placed below it;
  // the service's transaction id only at the foot, for the partner's support.
  function renderFacts(progress, transactionId) {
    $("transaction-title").textContent = progress.reference_number ? "Order " + progress.reference_number : "Your order";
    var meta = [];
    if (progress.ordered_at) {
      meta.push("Ordered " + timeText(progress.ordered_at) + (progress.ordered_by ? " by " + progress.ordered_by : ""));
    }
    // The promise of a reference only while the partner may still give one: not on an order that ended.
    if (!progress.reference_number && !END_STEPS.hasOwnProperty(progress.step)) {
      meta.push("The partner gives it a reference once they receive it");
    }
    $("order-meta").textContent = meta.map(function (sentence) { return sentence + "."; }).join(" ");
    $("transaction-id").textContent = transactionId;
    $("support").hidden = !transactionId;
  }

  // The result's heading and the partner's last word: what a lender looks for first.
  var RESULT_TITLES = {
    requested: "Waiting for the partner",
    in_progress: "The partner is working on the order",
    delivered: "Delivered",
    completed: "Completed"
  };
  var RESULT_TEXTS = {
    requested: "The partner has not picked up the order yet.",
    in_progress: "The results appear here as soon as the partner delivers them.",
    delivered: "The results were sent to the loan application.",
    completed: "The results are in the loan application."
  };

  function renderResult(progress) {
    var ended = END_STEPS.hasOwnProperty(progress.step);
    $("result").setAttribute("data-step", progress.step);
    $("result-title").hidden = ended;  // a failed or declined order says so in its own box
    $("result-title").textContent = ended ? "" : (RESULT_TITLES[progress.step] || progress.step);
    var text = ended ? "" : (progress.partner_status || RESULT_TEXTS[progress.step] || "");
    $("result-text").textContent = text;
    $("result-text").hidden = !text;
    // A failed or declined order with nothing delivered says so above: no empty "Documents" under it.
    $("documents-block").hidden = ended && !(progress.documents || []).length;
  }

  // What the partner delivered, first: one group per loan field (the appraisal), each value labelled
  // and written as the product's response form says (the back-end formats them: one place for all).
  function renderResults(progress) {
    var groups = progress.results || [];
    var block = $("results-block");
    block.hidden = groups.length === 0;
    block.textContent = "";
    groups.forEach(function (group) {
      var titleId = "results-" + group.field;
      block.appendChild(el("h4", { id: titleId, "class": "results-title" }, group.title));
      var list = el("dl", { "class": "results-values", "aria-labelledby": titleId, "data-field": group.field });
      group.values.forEach(function (value) {
        var row = el("div", { "class": "results-value", "data-name": value.name });
        row.appendChild(el("dt", {}, value.label));
        row.appendChild(el("dd", {}, value.text));
        list.appendChild(row);
      });
      block.appendChild(list);
    });
  }

  // A delivery's values on one line: "Appraised value $455,000 · Effective date November 27, 2026".
  function valuesLine(groups) {
    var parts = [];
    (groups || []).forEach(function (group) {
      group.values.forEach(function (value) { parts.push(value.label + " " + value.text); });
    });
    return parts.join(" · ");
  }

  // Before and after, field by field, once the results reached the lender; the report is under Documents.
  function renderFindings(progress) {
    var findings = progress.findings || [];
    $("findings-block").hidden = findings.length === 0;
    var body = $("findings").querySelector("tbody");
    body.textContent = "";
    findings.forEach(function (finding) {
      var row = el("tr", { "class": finding.changed ? "changed" : null });
      row.appendChild(el("th", { scope: "row" }, finding.label));
      row.appendChild(el("td", {}, finding.before || "Not given"));
      var after = el("td", {}, finding.after || "Not given");
      after.appendChild(el("span", { "class": finding.changed ? "change-note" : "change-note muted" }, finding.changed ? " Changed" : " Unchanged"));
      row.appendChild(after);
      body.appendChild(row);
    });
  }

  // ---- a staff-worked order's timeline ------------------------------------------------

  function timeText(iso) {
    var date = new Date(iso);
    if (!iso || isNaN(date.getTime())) { return ""; }
    try { return date.toLocaleString(undefined, DATE_FORMAT); } catch (e) { return date.toLocaleString(); }
  }

  function clockText(iso) {
    var date = new Date(iso);
    if (!iso || isNaN(date.getTime())) { return ""; }
    try { return date.toLocaleTimeString(undefined, { hour: "numeric", minute: "2-digit", second: "2-digit" }); } catch (e) { return date.toLocaleTimeString(); }
  }

  function timeNode(iso) {
    return el("time", { datetime: iso }, timeText(iso));
  }

  function sizeText(bytes) {
    var size = Number(bytes) || 0;
    if (size < 1024) { return size + " bytes"; }
    if (size < 1024 * 1024) { return Math.round(size / 1024) + " KB"; }
    return (size / 1024 / 1024).toFixed(1) + " MB";
  }

  function kindText(mimeType) {
    return { "application/pdf": "PDF", "image/png": "PNG image", "image/jpeg": "JPEG image" }[mimeType] || mimeType || "";
  }

  function renderDue(progress) {
    var due = $("due");
    var open = progress.step === "requested" || progress.step === "in_progress";
    var text = progress.due_at && open ? timeText(progress.due_at) : "";
    due.hidden = !text;
    due.textContent = "";
    if (!text) { return; }
    var when = el("strong");
    when.appendChild(timeNode(progress.due_at));
    due.appendChild(document.createTextNode("Expected by "));
    due.appendChild(when);
  }

  function timelineEntry(entry) {
    var item = el("li", { "class": "entry entry-" + entry.kind, "data-entry-id": entry.id, "data-kind": entry.kind });
    var head = el("div", { "class": "entry-head" });
    head.appendChild(el("h4", { "class": "entry-title" }, entry.label));
    var when = el("p", { "class": "entry-time muted" });
    when.appendChild(timeNode(entry.sent_at));
    head.appendChild(when);
    item.appendChild(head);
    if (entry.text) { item.appendChild(el("p", { "class": "entry-text" }, entry.text)); }
    var values = valuesLine(entry.values);
    if (values) { item.appendChild(el("p", { "class": "entry-values" }, values)); }
    var documents = entry.documents || [];
    if (documents.length) {
      var list = el("ul", { "class": "documents", "aria-label": "Documents: " + entry.label });
      documents.forEach(function (doc) { list.appendChild(documentItem(doc)); });
      item.appendChild(list);
    }
    return item;
  }

  // One behaviour for every document, of any product: "Open" puts it in front of the lender in the loan
  // application's documents where the host offers that (it holds the service's copy); "Download"
  // otherwise; once the file is gone here (retention), where to find it.
  function documentItem(doc) {
    var li = el("li", { "class": "document", "data-document-id": doc.id });
    var about = el("span", { "class": "document-about" });
    about.appendChild(el("span", { "class": "name" }, doc.name));
    about.appendChild(el("span", { "class": "muted" }, " " + [kindText(doc.mime_type), sizeText(doc.size)].filter(Boolean).join(", ")));
    li.appendChild(about);
    var button = null;
    if (hostOpens() && doc.resource_id) {
      button = el("button", { type: "button", "class": "button small", "aria-label": "Open " + doc.name, "data-action": "open" }, "Open");
      button.addEventListener("click", function () { documentOpen(doc, button); });
    } else if (doc.download_url) {
      button = el("button", { type: "button", "class": "button small", "aria-label": "Download " + doc.name, "data-action": "download" }, "Download");
      button.addEventListener("click", function () { documentDownload(doc, button); });
    }
    if (button) { li.appendChild(button); } else {
      li.appendChild(el("span", { "class": "muted" }, " In the loan's documents in the loan application."));
    }
    return li;
  }

  function hostOpens() {
    return Boolean(state.host && typeof state.host.openResource === "function");
  }

  // Newest first. Entries never change once sent: new ones go on top (the list's live region reads
  // them out), and the list is rebuilt only if what is on the page is not the start of the answer.
  function renderTimeline(progress) {
    var staff = Boolean(progress.staff_worked);
    $("timeline-block").hidden = !staff;
    if (!staff) { return; }
    var entries = progress.timeline || [];  // oldest first, as the back-end sends them
    var list = $("timeline");
    var ids = entries.map(function (entry) { return entry.id; });
    var kept = state.timelineIds.every(function (id, index) { return ids[index] === id; });
    if (!kept) {
      list.setAttribute("aria-live", "off");
      list.textContent = "";
      state.timelineIds = [];
    }
    entries.slice(state.timelineIds.length).forEach(function (entry) { list.insertBefore(timelineEntry(entry), list.firstChild); });
    state.timelineIds = ids;
    $("timeline-empty").hidden = entries.length > 0;
    // What was there when the order opened is not read out; what arrives from now on is.
    window.setTimeout(function () { list.setAttribute("aria-live", "polite"); }, 0);
  }

  function downloadProblem(response, body) {
    var errors = (body && Array.isArray(body.errors)) ? body.errors : [];
    if (response.status === 404) { return "The document is not available."; }
    if (errors.length && errors[0] && errors[0].message) { return errors[0].message; }
    if (body && typeof body.status === "string") { return body.status; }
    return "The partner answered HTTP " + response.status + ".";
  }

  function documentDownload(doc, button) {
    button.disabled = true;
    button.setAttribute("aria-busy", "true");
    withPanel(function () {
      return fetch(doc.download_url, { headers: panelHeaders(doc.mime_type || "*/*"), credentials: "same-origin", cache: "no-store" });
    }).then(function (response) {
      if (!response.ok) {
        return readJson(response).then(function (body) { throw new Error(downloadProblem(response, body)); });
      }
      return response.blob();
    }).then(function (blob) {
      // A Blob URL of our own origin: the file is saved under its name, nothing is opened in the frame.
      var url = URL.createObjectURL(blob);
      var link = el("a", { href: url, download: doc.name, hidden: true });
      document.body.appendChild(link);
      link.click();
      link.remove();
      window.setTimeout(function () { URL.revokeObjectURL(url); }, 60000);
      announce("Downloaded " + doc.name + ".");
    }).catch(function (error) {
      announce("Could not download " + doc.name + ": " + errorText(error) + " Try again.");
    }).finally(function () {
      button.disabled = false;
      button.removeAttribute("aria-busy");
    });
  }

  // Every document that reached the lender, the latest delivery's first, in the result.
  function renderDocuments(documents) {
    var key = JSON.stringify(documents) + hostOpens();
    if (key === state.lastDocuments) { return; }
    state.lastDocuments = key;
    var list = $("documents");
    list.textContent = "";
    $("documents-empty").hidden = documents.length > 0;
    documents.forEach(function (doc) { list.appendChild(documentItem(doc)); });
  }

  function documentOpen(doc, button) {
    button.disabled = true;
    withTimeout(state.host.openResource({ id: doc.resource_id, name: doc.name, mimeType: doc.mime_type }),
      HOST_TIMEOUT_MS, "The loan application did not open the document.")
      .then(function () { announce("Opened " + doc.name + " in the loan's documents."); })
      .catch(function (error) { announce("Could not open " + doc.name + ": " + errorText(error) + " Try again."); })
      .finally(function () { button.disabled = false; });
  }

  function stopPolling() {
    window.clearTimeout(state.pollTimer);
    state.pollTimer = null;
  }

  function pollProgress(transactionId, failures) {
    stopPolling();
    var url = cfg.progressUrl.replace("TRANSACTION_ID", encodeURIComponent(transactionId));
    withPanel(function () {
      return fetch(url, { headers: panelHeaders(), credentials: "same-origin", cache: "no-store" });
    }).then(function (response) {
      return readJson(response).then(function (body) {
        if (!response.ok) {
          if (response.status === 401 || (response.status === 404 && body.errors)) {
            showBackendProblem(response, body, function () { showTransaction(transactionId); });
            return;
          }
          throw new Error("HTTP " + response.status);
        }
        $("progress-note").hidden = true;
        renderProgress(body, transactionId);
        if (!body.finished) {
          // Keep asking while the order can still change: a delivered one is confirmed within seconds;
          // one with staff, or a failed one staff may send through again, changes over hours.
          var slow = body.step === "failed" || (body.staff_worked && body.step === "in_progress");
          var pause = slow ? STAFF_POLL_MS : POLL_MS;
          state.pollTimer = window.setTimeout(function () { pollProgress(transactionId, 0); }, pause);
        }
      });
    }).catch(function (error) {
      // Keep trying with a growing pause; say so, so the lender knows the view may lag.
      var next = Math.min(POLL_MS * Math.pow(2, failures + 1), 60000);
      var note = $("progress-note");
      note.textContent = "Could not refresh the status (" + errorText(error) + "). Trying again in " + Math.round(next / 1000) + " seconds.";
      note.hidden = false;
      state.pollTimer = window.setTimeout(function () { pollProgress(transactionId, failures + 1); }, next);
    });
  }

  function renderProgress(progress, transactionId) {
    renderFacts(progress, transactionId);
    renderSteps(progress);
    renderResult(progress);
    renderResults(progress);
    renderFindings(progress);
    renderDue(progress);
    renderDocuments(progress.documents || []);
    renderTimeline(progress);
    app.setAttribute("data-step", progress.step);
    if (progress.step !== state.lastStep) {
      state.lastStep = progress.step;
      var text = "Status: " + (STEP_TEXT[progress.step] || progress.step);
      if (END_STEPS.hasOwnProperty(progress.step) && progress.reason) { text += " " + progress.reason; }
      announce(text);
    }
  }

  function showTransaction(transactionId) {
    state.lastStep = null;
    state.lastDocuments = "";
    state.timelineIds = [];
    $("timeline").textContent = "";
    $("timeline").setAttribute("aria-live", "off");
    renderProgress({ step: "requested", documents: [] }, transactionId);
    // The order's progress comes first; the loan it is for below it (DOM order = reading and focus order).
    app.insertBefore($("transaction"), $("loan"));
    show(["loan", "transaction"]);
    app.setAttribute("data-state", "transaction");
    $("transaction-title").focus();
    pollProgress(transactionId, 0);
  }

  // ---- start ---------------------------------------------------------------------------

  // Opened on its own (not framed), nobody can answer the guest library, which talks to the parent
  // window only: say so at once, with where the page opens (a link to the sandbox's host page in local runs).
  function showOutside() {
    showProblem(
      "Open this page from the loan application",
      "This is the partner's order page. It opens inside the loan application, which shares the loan with it; on its own it has no loan to show.",
      "In the loan application, open the loan, go to its services and choose this partner's product." +
        (cfg.hostPageUrl ? " For a local trial:" : ""),
      null,
      cfg.hostPageUrl ? { href: cfg.hostPageUrl, text: "open the sandbox host page" } : null
    );
  }

  function start() {
    if (window.parent === window) { showOutside(); return; }
    stopPolling();
    setLoading("Connecting to the loan application…");
    app.setAttribute("data-state", "loading");
    var hostReady = state.host ? Promise.resolve(state.host) : hostConnect();
    hostReady
      .then(function (host) {
        state.host = host;
        return withTimeout(host.getOrigin(), HOST_TIMEOUT_MS, "The loan application did not share the loan.");
      })
      .then(function (origin) {
        if (!origin || !origin.id || !origin.partnerAccessToken) { throw new Error("The loan application shared no session."); }
        originSet(origin);
        setLoading("Loading the loan…");
        return fetchOriginContext();
      })
      .then(function (response) {
        return readJson(response).then(function (body) {
          if (!response.ok) { showBackendProblem(response, body, start); return; }
          state.context = body;
          panelSet(body);
          renderSummary(body);
          if (state.origin.transactionId) { showTransaction(state.origin.transactionId); } else { showOrder(body); }
        });
      })
      .catch(function (error) {
        showProblem(
          "The order page could not start",
          errorText(error),
          "Close this page and open it again from the loan; if that does not help, reload the loan application.",
          start
        );
      });
  }

  $("order-form").addEventListener("submit", orderSubmit);
  $("order-cancel").addEventListener("click", function () { hostClose(); });
  $("close-button").addEventListener("click", function () { hostClose(); });

  function hostClose() {
    stopPolling();
    if (state.host && typeof state.host.close === "function") {
      state.host.close().catch(function () { /* the host may already have removed the frame */ });
    }
  }

  start();
})();
