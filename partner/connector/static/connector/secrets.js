// The secrets a new connection's page shows once: a Copy button beside each value and beside the
// environment snippet (admin/connector: ConnectionAdmin.Media).
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  for (const value of document.querySelectorAll("code.connection-secret, pre.connection-env")) {
    const button = document.createElement("button");
    button.type = "button";
    button.className = "button connection-copy";
    button.textContent = "Copy";
    button.setAttribute("aria-label", `Copy ${value.dataset.name || "the environment variables"}`);
    button.addEventListener("click", async () => {
      await navigator.clipboard.writeText(value.textContent);
      button.textContent = "Copied";
    });
    value.after(button);
  }
});
