"""What a view leaves in the saved notebook besides its live widget.

A view's output carries, next to jupyter_bokeh's widget:

- ``application/vnd.hermes.view.v1+json``: the widget's model id and the plot's root id; the
  Hermes lab extension shows the live widget while its model exists and otherwise (a reopened
  notebook, a new kernel) draws the plot with the page's BokehJS from the document the
  ``text/html`` fragment holds (older outputs carry it here too, as ``doc_json``);
- ``text/html``: a standalone fragment that embeds the plot as a Bokeh document (a JSON block)
  and loads BokehJS from the Jupyter server's ``hermes/bokeh`` folder (never a CDN), for other
  front ends and exports; the document is kept once;
- ``text/plain``: a one-line summary of what the view shows.

A widget that is no Bokeh plot (the pipeline builder) leaves a picture of itself in HTML
instead (:func:`snapshot_bundle`): the lab extension shows that ``text/html`` when the widget's
model is gone.
"""

from __future__ import annotations

import html
import json
import os
import secrets
from collections.abc import Iterable
from typing import Any

from bokeh.embed.util import standalone_docs_json_and_render_items
from bokeh.model import Model

HERMES_VIEW_MIME = "application/vnd.hermes.view.v1+json"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
#: what the server extension sets for the kernels it starts (``hermes_nb.server.BOKEHJS_ENV``)
BOKEHJS_ENV = "HERMES_NB_BOKEHJS_URL"
#: BokehJS's files, in load order, under that folder
BOKEHJS_FILES = ("js/bokeh.min.js", "js/bokeh-gl.min.js", "js/bokeh-widgets.min.js",
                 "js/bokeh-tables.min.js")


def bokehjs_url() -> str:
    """The URL path of the folder BokehJS is served from (the server's ``hermes/bokeh/``)."""
    return os.environ.get(BOKEHJS_ENV) or "/hermes/bokeh/"


def page_has_bokehjs() -> bool:
    """Whether this kernel was started by a Jupyter server with the Hermes extension, whose lab
    extension puts BokehJS in every page."""
    return bool(os.environ.get(BOKEHJS_ENV))


def document_json(model: Model) -> dict[str, Any]:
    """``model``'s document with the id of its root: what BokehJS's ``embed.embed_item`` takes.
    The document is a JSON string: BokehJS reads a model's definition before its references,
    an order a saved notebook (whose JSON keys are sorted) would not keep."""
    from bokeh.core.json_encoder import serialize_json

    docs_json, (item,) = standalone_docs_json_and_render_items([model], suppress_callback_warning=True)
    (doc,) = docs_json.values()
    return {"doc_json": serialize_json(doc), "root_id": item.to_json()["root_ids"][0]}


#: draws the data block ``@JSON@`` into ``@EL@`` once BokehJS is there (scripts added to a
#: page load in any order); the document is parsed with JSON.parse, never evaluated
_LOADER = (
    "(function(){var el=document.getElementById(@EL@),tries=0;"
    "var item={doc:JSON.parse(document.getElementById(@JSON@).textContent),root_id:@ROOT@};"
    "function go(){if(window.Bokeh&&window.Bokeh.embed){window.Bokeh.embed.embed_item(item,el);}"
    "else if(tries++<100){setTimeout(go,100);}}go();})();"
)


def static_html(embed: dict[str, Any], summary: str, classes: Iterable[str]) -> str:
    """A standalone HTML fragment drawing the document ``embed`` (from :func:`document_json`)
    with BokehJS from the server's ``hermes/bokeh/`` folder."""
    ident = f"hermes-static-{secrets.token_hex(6)}"  # Bokeh's ids repeat across kernels
    data = embed["doc_json"].replace("</", "<\\/")  # no "</script>" inside the block
    loader = (_LOADER.replace("@EL@", json.dumps(ident)).replace("@JSON@", json.dumps(ident + "-json"))
              .replace("@ROOT@", json.dumps(embed["root_id"])))
    scripts = "".join(f'<script src="{html.escape(bokehjs_url() + f)}"></script>' for f in BOKEHJS_FILES)
    cls = html.escape(" ".join(["hermes-static-view", *classes]))
    return (f'<div class="{cls}"><div class="hermes-static-summary">{html.escape(summary)}</div>'
            f'{scripts}<div id="{ident}"></div>'
            f'<script type="application/json" id="{ident}-json">{data}</script>'
            f"<script>{loader}</script></div>")


def view_bundle(widget_bundle: dict[str, Any], model: Model, summary: str,
                classes: Iterable[str]) -> dict[str, Any]:
    """``widget_bundle`` (ipywidgets' mime bundle of the widget showing ``model``) with the
    static fallbacks and the summary added."""
    classes = list(classes)
    embed = document_json(model)
    model_id = widget_bundle.get(WIDGET_MIME, {}).get("model_id", "")
    return {
        **widget_bundle,
        HERMES_VIEW_MIME: {"root_id": embed["root_id"], "model_id": model_id, "classes": classes,
                           "summary": summary},
        "text/html": static_html(embed, summary, classes),
        "text/plain": summary,
    }


def snapshot_bundle(widget_bundle: dict[str, Any], snapshot: str, summary: str,
                    classes: Iterable[str]) -> dict[str, Any]:
    """``widget_bundle`` with ``snapshot`` (HTML this package made, nothing the user typed
    unescaped) as the picture a reopened notebook shows, and the summary."""
    model_id = widget_bundle.get(WIDGET_MIME, {}).get("model_id", "")
    cls = html.escape(" ".join(["hermes-static-view", *classes]))
    return {
        **widget_bundle,
        HERMES_VIEW_MIME: {"model_id": model_id, "classes": list(classes), "summary": summary},
        "text/html": (f'<div class="{cls}"><div class="hermes-static-summary">'
                      f"{html.escape(summary)}</div>{snapshot}</div>"),
        "text/plain": summary,
    }
