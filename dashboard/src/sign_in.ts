/** Sign-in with an email and a password (supabase-js `auth.signInWithPassword`). */
import type { DashboardClient } from "./data.ts";
import { h, show } from "./ui.ts";

export function signIn(root: HTMLElement, client: DashboardClient, notice = ""): void {
  const message = h("p", { class: "notice", role: "alert" }, notice);
  const email = h("input", {
    id: "email",
    type: "email",
    name: "email",
    autocomplete: "username",
    required: true,
  });
  const password = h("input", {
    id: "password",
    type: "password",
    name: "password",
    autocomplete: "current-password",
    required: true,
  });
  const button = h("button", { type: "submit" }, "Sign in");
  const form = h(
    "form",
    {
      class: "sign-in",
      "aria-labelledby": "sign-in-title",
      onsubmit: async (event: Event) => {
        event.preventDefault();
        button.disabled = true;
        show(message);
        const { error } = await client.auth.signInWithPassword({
          email: email.value.trim(),
          password: password.value,
        });
        button.disabled = false;
        // Supabase Auth's own sentence ("Invalid login credentials") is meant for people.
        if (error) show(message, error.message);
      },
    },
    h("h1", { id: "sign-in-title" }, "Sign in"),
    h("label", { for: "email" }, "Email"),
    email,
    h("label", { for: "password" }, "Password"),
    password,
    button,
    message,
  );
  show(root, h("main", { class: "center" }, form));
  email.focus();
}
