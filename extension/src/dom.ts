// Small DOM builders the panel's sections share. Every value is written with textContent:
// nothing from the server is parsed as HTML.

export function cell(row: HTMLTableRowElement, text: string, tag: 'td' | 'th' = 'td'): HTMLElement {
  const element = document.createElement(tag);
  element.textContent = text;
  row.appendChild(element);
  return element;
}

export function table(headers: string[], rows: string[][]): HTMLTableElement {
  const element = document.createElement('table');
  element.className = 'hermes-table';
  const head = element.createTHead().insertRow();
  headers.forEach(h => cell(head, h, 'th'));
  const body = element.createTBody();
  rows.forEach(values => {
    const row = body.insertRow();
    values.forEach(v => cell(row, v));
  });
  return element;
}

export function heading(text: string): HTMLElement {
  const element = document.createElement('h3');
  element.textContent = text;
  return element;
}
