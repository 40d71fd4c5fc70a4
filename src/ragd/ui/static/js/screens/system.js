// placeholder: being built
import { h } from "../dom.js";

export async function render(main) {
  main.append(h("h1", {}, "system"), h("p", {}, "This screen is being built."));
}
