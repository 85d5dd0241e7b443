// Paging by an API's opaque cursor: the cursor of every page seen is kept, so "Older" goes
// on with the answer's `next_cursor` and "Newer" goes back one page.

import { $ } from "./dom.js";

export class CursorPager {
  /** The pager of the buttons `<prefix>-newer`, `<prefix>-older` and the label
   * `<prefix>-page`; `show` reads the current page again. */
  constructor(prefix, show) {
    this.prefix = prefix;
    this.show = show;
    this.cursors = [null];
  }

  /** The cursor of the page to read now (null: the newest). */
  get cursor() { return this.cursors[this.cursors.length - 1]; }

  /** Start again from the newest page (new filters). */
  reset() { this.cursors = [null]; }

  /** Set the buttons from the page the API answered. */
  update(page) {
    const older = $(`${this.prefix}-older`);
    older.disabled = !page.has_more;
    older.dataset.cursor = page.next_cursor || "";
    $(`${this.prefix}-newer`).disabled = this.cursors.length <= 1;
    $(`${this.prefix}-page`).textContent = `Page ${this.cursors.length}`;
  }

  bind(ui) {
    ui.submit(`${this.prefix}-form`, async () => { this.reset(); await this.show(); });
    $(`${this.prefix}-older`).addEventListener("click", () => ui.guarded(async () => {
      this.cursors.push($(`${this.prefix}-older`).dataset.cursor);
      await this.show();
    }));
    $(`${this.prefix}-newer`).addEventListener("click", () => ui.guarded(async () => {
      this.cursors.pop();
      await this.show();
    }));
  }
}
