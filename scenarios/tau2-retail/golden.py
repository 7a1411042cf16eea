#!/usr/bin/env python3
"""Records tau2's own answers for the Rust port of the retail domain (crates/core/src/tau2/).

Runs, with tau2-bench's code (commit a2c0247) and the database shipped beside this script:

* every tool call of a list of cases, in order, on ONE database, through tau2's
  ``Environment.get_response`` (content and error flag, exactly as an agent would see them);
  the cases cover each of the 16 tools: answers, every error message a tool can raise,
  wrongly typed and missing arguments, mutating sequences; plus ``calculate`` on a corpus of
  expressions (hand-picked and generated with a fixed seed);
* the SHA-256 of the database (tau2's ``get_db_hash``) before and after the cases;
* for every task, its gold actions replayed on a fresh database as tau2's evaluator replays
  them: how many answer with an error, and the hash of the database after them;
* tau2's ``EnvironmentEvaluator.calculate_reward`` on a few agent trajectories (the gold
  actions themselves, one with a planted wrong argument, one with the reads only);
* the tools as tau2 exposes them to the model (``Tool.openai_schema``), and which mutate.

It writes ``crates/core/src/tau2/golden.json``. Usage, from the repository root::

    mkdir -p /tmp/tau2 && tar xzf ../shared/reference/tau2-bench/tau2-bench-a2c0247.tar.gz -C /tmp/tau2
    python3 -m venv /tmp/tau2venv
    /tmp/tau2venv/bin/pip install pydantic==2.12.4 loguru==0.7.3 docstring-parser==0.17.0 \
        addict==2.4.0 deepdiff==8.6.2 python-dotenv==1.2.1 pyyaml==6.0.3 toml==0.10.2 pandas==2.3.3
    /tmp/tau2venv/bin/python scenarios/tau2-retail/golden.py --tau2 /tmp/tau2

Only the modules of the retail domain, the environment and the evaluator are imported (tau2's
package ``__init__`` pulls in the LLM stack, and the archive leaves the voice modules out: the
two are stubbed). The output is deterministic.
"""

import argparse
import json
import os
import platform
import random
import sys
import types
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
OUT = os.path.join(ROOT, "crates", "core", "src", "tau2", "golden.json")


def import_tau2(src):
    """Imports tau2's retail tools, environment and evaluator without its package init."""
    sys.path.insert(0, src)
    pkg = types.ModuleType("tau2")
    pkg.__path__ = [os.path.join(src, "tau2")]
    sys.modules["tau2"] = pkg
    voice = types.ModuleType("tau2.voice_config")

    class Stub(int):
        """Stands for any voice setting: the number 1, and an empty sequence."""

        def __iter__(self):
            return iter(())

    voice.__getattr__ = lambda name: Stub(1)
    sys.modules["tau2.voice_config"] = voice
    from loguru import logger

    logger.remove()
    warnings.simplefilter("ignore")
    import tau2.domains.retail.data_model as dm
    import tau2.domains.retail.tools as tools
    import tau2.environment.environment as environment
    import tau2.evaluator.evaluator_env as evaluator_env
    import tau2.data_model.message as message
    import tau2.data_model.tasks as tasks_model
    import tau2.utils.utils as utils

    return dm, tools, environment, evaluator_env, message, tasks_model, utils


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tau2", required=True, help="the extracted tau2-bench archive")
    ap.add_argument("--out", default=OUT)
    opts = ap.parse_args()
    dm, tools_mod, env_mod, evaluator_env, message, tasks_model, utils = import_tau2(
        os.path.join(opts.tau2, "src")
    )
    import pydantic

    with open(os.path.join(HERE, "db.json")) as f:
        raw_db = json.load(f)
    with open(os.path.join(HERE, "tasks.json")) as f:
        raw_tasks = json.load(f)

    def fresh_db():
        return dm.RetailDB.model_validate(raw_db)

    def make_env(**_kwargs):
        return env_mod.Environment(
            domain_name="retail", policy="", tools=tools_mod.RetailTools(fresh_db())
        )

    def db_hash(env):
        return env.get_db_hash()

    env = make_env()
    db = env.tools.db
    initial_hash = db_hash(env)

    # ------------------------------------------------------------------ pick records
    orders = list(db.orders.values())

    def user_of(o):
        return db.users[o.user_id]

    def pm_kind(user, pm_id):
        pm = user.payment_methods.get(pm_id)
        return None if pm is None else pm.source

    def pick(pred, skip=()):
        for o in orders:
            if o.order_id not in skip and pred(o):
                return o
        raise SystemExit("no order fits")

    used = set()

    def take(pred):
        o = pick(pred, used)
        used.add(o.order_id)
        return o

    def paid_with(kind):
        return lambda o: (
            len(o.payment_history) == 1
            and pm_kind(user_of(o), o.payment_history[0].payment_method_id) == kind
        )

    def user_has(kind):
        return lambda o: any(p.source == kind for p in user_of(o).payment_methods.values())

    def variants_of(item):
        return db.products[item.product_id].variants

    def other_variant(item, available=True, cheaper=None):
        for vid, v in variants_of(item).items():
            if vid == item.item_id or v.available != available:
                continue
            if cheaper is True and not v.price < item.price:
                continue
            if cheaper is False and not v.price > item.price:
                continue
            return vid
        return None

    def first_gift_card(user):
        return next(p.id for p in user.payment_methods.values() if p.source == "gift_card")

    def first_of(user, kind):
        return next((p.id for p in user.payment_methods.values() if p.source == kind), None)

    pending = lambda o: o.status == "pending"
    delivered = lambda o: o.status == "delivered"

    cases = []

    def add(tool, **arguments):
        cases.append({"tool": tool, "arguments": arguments})

    # ------------------------------------------------------------------ generic failures
    add("get_order_details")
    add("no_such_tool", order_id="#W0000000")
    add("_get_order", order_id="#W0000000")
    add("get_order_details", order_id="#W0000000", extra=1)
    add("get_order_details", self="x")
    add("get_order_details", tool_name="x", order_id="#W0000000")
    add("get_order_details", requestor="assistant", order_id="#W0000000")
    add("modify_user_address", user_id="x")
    add("modify_user_address", user_id="x", address1="a")
    add("exchange_delivered_order_items", order_id="#W0000000", item_ids=[])
    add("list_all_product_types", x=1)

    # ------------------------------------------------------------------ reads
    some_order = orders[0]
    some_user = user_of(some_order)
    small_product = min(db.products.values(), key=lambda p: len(p.variants))
    item = some_order.items[0]
    add("get_order_details", order_id=some_order.order_id)
    add("get_order_details", order_id="#W0000000")
    add("get_order_details", order_id=some_order.order_id.lstrip("#"))
    add("get_order_details", order_id=1234)
    add("get_order_details", order_id=12.5)
    add("get_order_details", order_id=None)
    add("get_order_details", order_id=True)
    add("get_order_details", order_id=[some_order.order_id])
    add("get_order_details", order_id={"id": some_order.order_id})
    add("get_product_details", product_id=small_product.product_id)
    add("get_product_details", product_id=item.item_id)
    add("get_product_details", product_id=[1])
    add("get_item_details", item_id=item.item_id)
    add("get_item_details", item_id=item.product_id)
    add("get_item_details", item_id=123)
    add("get_item_details", item_id={"a": 1})
    add("get_user_details", user_id=some_user.user_id)
    add("get_user_details", user_id="nobody_0000")
    add("get_user_details", user_id=["x"])
    add("list_all_product_types")
    u = some_user
    add("find_user_id_by_email", email=u.email)
    add("find_user_id_by_email", email=u.email.upper())
    add("find_user_id_by_email", email="nobody@example.com")
    add("find_user_id_by_email", email=None)
    add("find_user_id_by_email", email=["a"])
    add("find_user_id_by_email", email=7)
    add(
        "find_user_id_by_name_zip",
        first_name=u.name.first_name,
        last_name=u.name.last_name,
        zip=u.address.zip,
    )
    add(
        "find_user_id_by_name_zip",
        first_name=u.name.first_name.upper(),
        last_name=u.name.last_name.lower(),
        zip=u.address.zip,
    )
    add("find_user_id_by_name_zip", first_name=u.name.first_name, last_name=u.name.last_name, zip="00000")
    add("find_user_id_by_name_zip", first_name=u.name.first_name, last_name=u.name.last_name, zip=int(u.address.zip))
    add("find_user_id_by_name_zip", first_name=1, last_name="x", zip="1")
    add("find_user_id_by_name_zip", first_name="Nobodyxyz", last_name=1, zip="1")
    add("find_user_id_by_name_zip", first_name=u.name.first_name, last_name=None, zip="1")
    add("transfer_to_human_agents", summary="The user wants a refund to another card.")
    add("transfer_to_human_agents", summary=42)
    add("transfer_to_human_agents")

    # ------------------------------------------------------------------ cancel_pending_order
    o_gc = take(lambda o: pending(o) and paid_with("gift_card")(o))
    o_cc = take(lambda o: pending(o) and paid_with("credit_card")(o))
    o_proc = take(lambda o: o.status == "processed")
    add("cancel_pending_order", order_id=o_proc.order_id, reason="no longer needed")
    add("cancel_pending_order", order_id=o_gc.order_id, reason="changed my mind")
    add("cancel_pending_order", order_id=o_gc.order_id, reason=["no longer needed"])
    add("cancel_pending_order", order_id=o_gc.order_id, reason=1)
    add("cancel_pending_order", order_id="#W0000000", reason="no longer needed")
    add("cancel_pending_order", order_id=o_gc.order_id)
    add("get_user_details", user_id=o_gc.user_id)
    add("cancel_pending_order", order_id=o_gc.order_id, reason="ordered by mistake")
    add("get_user_details", user_id=o_gc.user_id)
    add("cancel_pending_order", order_id=o_gc.order_id, reason="ordered by mistake")
    add("cancel_pending_order", order_id=o_cc.order_id, reason="no longer needed")

    # ------------------------------------------------------------------ modify_pending_order_address
    o_addr = take(pending)
    good_address = dict(
        address1="1 Test Street", address2="", city="Springfield", state="IL", country="USA", zip="62701"
    )
    add("modify_pending_order_address", order_id=o_addr.order_id, **good_address)
    add("modify_pending_order_address", order_id=o_proc.order_id, **good_address)
    add("modify_pending_order_address", order_id="#W0000000", **good_address)
    add(
        "modify_pending_order_address",
        order_id=o_addr.order_id,
        address1=1,
        address2=None,
        city=["a"],
        state={"b": [1, 2]},
        country=1.5,
        zip="x" * 80,
    )
    add(
        "modify_pending_order_address",
        order_id=o_addr.order_id,
        address1="Straße 5 ünd ' \" \\ \n",
        address2=True,
        city=["a" * 40, "b" * 40],
        state="s",
        country="c",
        zip=["é" * 30, "ü" * 31],
    )
    add(
        "modify_pending_order_address",
        order_id=o_addr.order_id,
        address1="Straße 5 ünd ' \" \\ \n\u2028😀",
        address2="",
        city="Zürich",
        state="ZH",
        country="Switzerland",
        zip="8001",
    )

    # ------------------------------------------------------------------ modify_user_address
    add("modify_user_address", user_id=u.user_id, **good_address)
    add("modify_user_address", user_id="nobody_0000", **good_address)
    add("modify_user_address", user_id=u.user_id, **dict(good_address, zip=62701))
    add("modify_user_address", user_id=[1], **good_address)

    # ------------------------------------------------------------------ modify_pending_order_items
    def modifiable(o, n=1):
        return pending(o) and sum(1 for i in o.items if other_variant(i)) >= n

    o_mod = take(lambda o: modifiable(o, 2) and paid_with("gift_card")(o))
    o_mod2 = take(lambda o: modifiable(o, 1) and paid_with("credit_card")(o) and user_has("gift_card")(o))
    o_dup = take(
        lambda o: pending(o)
        and len(o.items) != len({i.item_id for i in o.items})
        and any(other_variant(i) for i in o.items)
    ) if any(
        pending(o) and len(o.items) != len({i.item_id for i in o.items}) for o in orders
    ) else None
    o_empty = take(pending)
    mod_items = [i for i in o_mod.items if other_variant(i)][:2]
    a, b = mod_items
    user_mod = user_of(o_mod)
    gc_mod = o_mod.payment_history[0].payment_method_id
    unavailable = next(
        (vid for vid, v in variants_of(a).items() if not v.available and vid != a.item_id), None
    )
    add("modify_pending_order_items", order_id=o_proc.order_id, item_ids=[a.item_id], new_item_ids=[other_variant(a)], payment_method_id=gc_mod)
    add("modify_pending_order_items", order_id=o_mod.order_id, item_ids=["0000000000"], new_item_ids=["1"], payment_method_id=gc_mod)
    add("modify_pending_order_items", order_id=o_mod.order_id, item_ids=[a.item_id, a.item_id] if sum(1 for i in o_mod.items if i.item_id == a.item_id) < 2 else [a.item_id] * 9, new_item_ids=["1", "2"], payment_method_id=gc_mod)
    add("modify_pending_order_items", order_id=o_mod.order_id, item_ids=[a.item_id], new_item_ids=[], payment_method_id=gc_mod)
    add("modify_pending_order_items", order_id=o_mod.order_id, item_ids=[a.item_id], new_item_ids=[a.item_id], payment_method_id=gc_mod)
    add("modify_pending_order_items", order_id=o_mod.order_id, item_ids=[a.item_id], new_item_ids=[b.item_id if b.product_id != a.product_id else "0000000000"], payment_method_id=gc_mod)
    if unavailable:
        add("modify_pending_order_items", order_id=o_mod.order_id, item_ids=[a.item_id], new_item_ids=[unavailable], payment_method_id=gc_mod)
    add("modify_pending_order_items", order_id=o_mod.order_id, item_ids=[a.item_id], new_item_ids=[other_variant(a)], payment_method_id="credit_card_0000000")
    add("modify_pending_order_items", order_id=o_mod.order_id, item_ids=[a.item_id], new_item_ids=[[1]], payment_method_id=gc_mod)
    add("modify_pending_order_items", order_id=o_mod.order_id, item_ids=[a.item_id], new_item_ids=[5], payment_method_id=gc_mod)
    add("modify_pending_order_items", order_id=o_mod.order_id, item_ids=[a.item_id], new_item_ids=5, payment_method_id=gc_mod)
    add("modify_pending_order_items", order_id=o_mod.order_id, item_ids=5, new_item_ids=[], payment_method_id=gc_mod)
    add("modify_pending_order_items", order_id=o_mod.order_id, item_ids=a.item_id, new_item_ids=[], payment_method_id=gc_mod)
    add("modify_pending_order_items", order_id=o_mod.order_id, item_ids={a.item_id: 1}, new_item_ids=[], payment_method_id=gc_mod)
    add("modify_pending_order_items", order_id=o_mod.order_id, item_ids=[None, 1.5], new_item_ids=[], payment_method_id=gc_mod)
    add("modify_pending_order_items", order_id=o_mod.order_id, item_ids=[[a.item_id]], new_item_ids=[], payment_method_id=gc_mod)
    # A gift card of the order's own user too poor for a dearer variant.
    def too_poor(status):
        for o in orders:
            if o.status != status or o.order_id in used:
                continue
            for p in user_of(o).payment_methods.values():
                if p.source != "gift_card":
                    continue
                for i in o.items:
                    for vid, v in variants_of(i).items():
                        if vid != i.item_id and v.available and v.price - i.price > p.balance:
                            used.add(o.order_id)
                            return o, i.item_id, vid, p.id
        raise SystemExit("no poor gift card")

    po, pi, pv, pg = too_poor("pending")
    add("modify_pending_order_items", order_id=po.order_id, item_ids=[pi], new_item_ids=[pv], payment_method_id=pg)
    # The quirk: every modified item takes the price and options of the LAST new variant.
    add("get_user_details", user_id=o_mod.user_id)
    add(
        "modify_pending_order_items",
        order_id=o_mod.order_id,
        item_ids=[a.item_id, b.item_id],
        new_item_ids=[other_variant(a), other_variant(b)],
        payment_method_id=gc_mod,
    )
    add("get_user_details", user_id=o_mod.user_id)
    add("modify_pending_order_items", order_id=o_mod.order_id, item_ids=[other_variant(a)], new_item_ids=[a.item_id], payment_method_id=gc_mod)
    c = [i for i in o_mod2.items if other_variant(i)][0]
    add("modify_pending_order_items", order_id=o_mod2.order_id, item_ids=[c.item_id], new_item_ids=[other_variant(c)], payment_method_id=first_gift_card(user_of(o_mod2)))
    if o_dup is not None:
        dup_id = next(i.item_id for i in o_dup.items if sum(1 for j in o_dup.items if j.item_id == i.item_id) > 1 and other_variant(i))
        dup_item = next(i for i in o_dup.items if i.item_id == dup_id)
        add("modify_pending_order_items", order_id=o_dup.order_id, item_ids=[dup_id, dup_id], new_item_ids=[other_variant(dup_item), other_variant(dup_item)], payment_method_id=o_dup.payment_history[0].payment_method_id)
    add("modify_pending_order_items", order_id=o_empty.order_id, item_ids=[], new_item_ids=[], payment_method_id=o_empty.payment_history[0].payment_method_id)
    o_empty2 = take(pending)
    add("modify_pending_order_items", order_id=o_empty2.order_id, item_ids="", new_item_ids={}, payment_method_id=o_empty2.payment_history[0].payment_method_id)

    # ------------------------------------------------------------------ modify_pending_order_payment
    o_pay = take(lambda o: pending(o) and paid_with("credit_card")(o) and user_has("gift_card")(o) and user_has("paypal")(o))
    o_pay2 = take(lambda o: pending(o) and paid_with("gift_card")(o) and (user_has("credit_card")(o) or user_has("paypal")(o)))
    pu = user_of(o_pay)
    add("modify_pending_order_payment", order_id=o_proc.order_id, payment_method_id=first_of(pu, "paypal"))
    add("modify_pending_order_payment", order_id=o_pay.order_id, payment_method_id="paypal_0000000")
    add("modify_pending_order_payment", order_id=o_pay.order_id, payment_method_id=o_pay.payment_history[0].payment_method_id)
    add("modify_pending_order_payment", order_id=o_pay.order_id, payment_method_id=["x"])
    add("modify_pending_order_payment", order_id=o_pay.order_id, payment_method_id=first_gift_card(pu))
    add("modify_pending_order_payment", order_id=o_pay.order_id, payment_method_id=first_of(pu, "paypal"))
    add("get_user_details", user_id=o_pay2.user_id)
    pu2 = user_of(o_pay2)
    add("modify_pending_order_payment", order_id=o_pay2.order_id, payment_method_id=first_of(pu2, "credit_card") or first_of(pu2, "paypal"))
    add("get_user_details", user_id=o_pay2.user_id)
    add("modify_pending_order_payment", order_id=o_mod.order_id, payment_method_id=gc_mod)
    add("modify_pending_order_payment", order_id=o_mod.order_id, payment_method_id=first_of(user_mod, "credit_card") or first_of(user_mod, "paypal") or gc_mod)

    # ------------------------------------------------------------------ exchange_delivered_order_items
    o_ex = take(lambda o: delivered(o) and sum(1 for i in o.items if other_variant(i)) >= 2)
    o_ex2 = take(lambda o: delivered(o) and any(other_variant(i, cheaper=False) for i in o.items) and user_has("gift_card")(o))
    o_ex3 = take(delivered)
    ex_items = [i for i in o_ex.items if other_variant(i)][:2]
    xa, xb = ex_items
    xu = user_of(o_ex)
    xpm = o_ex.payment_history[0].payment_method_id
    add("exchange_delivered_order_items", order_id=o_gc.order_id, item_ids=[], new_item_ids=[], payment_method_id=xpm)
    add("exchange_delivered_order_items", order_id="#W0000000", item_ids=[], new_item_ids=[], payment_method_id=xpm)
    add("exchange_delivered_order_items", order_id=o_ex.order_id, item_ids=["0000000000"], new_item_ids=["1"], payment_method_id=xpm)
    add("exchange_delivered_order_items", order_id=o_ex.order_id, item_ids=[xa.item_id, xa.item_id, xa.item_id], new_item_ids=["1"], payment_method_id=xpm)
    add("exchange_delivered_order_items", order_id=o_ex.order_id, item_ids=[xa.item_id], new_item_ids=["1", "2"], payment_method_id=xpm)
    add("exchange_delivered_order_items", order_id=o_ex.order_id, item_ids=[xa.item_id], new_item_ids=["0000000000"], payment_method_id=xpm)
    unavailable_x = next((vid for vid, v in variants_of(xa).items() if not v.available), None)
    if unavailable_x:
        add("exchange_delivered_order_items", order_id=o_ex.order_id, item_ids=[xa.item_id], new_item_ids=[unavailable_x], payment_method_id=xpm)
    add("exchange_delivered_order_items", order_id=o_ex.order_id, item_ids=[xa.item_id], new_item_ids=[other_variant(xa)], payment_method_id="gift_card_0000000")
    add("exchange_delivered_order_items", order_id=o_ex.order_id, item_ids=xa.item_id, new_item_ids=[other_variant(xa)], payment_method_id=xpm)
    add("exchange_delivered_order_items", order_id=o_ex.order_id, item_ids={xa.item_id: 1}, new_item_ids=[other_variant(xa)], payment_method_id=xpm)
    add("exchange_delivered_order_items", order_id=o_ex.order_id, item_ids=None, new_item_ids=[], payment_method_id=xpm)
    add("exchange_delivered_order_items", order_id=o_ex.order_id, item_ids=[xa.item_id], new_item_ids=None, payment_method_id=xpm)
    add("exchange_delivered_order_items", order_id=o_ex.order_id, item_ids=[xa.item_id], new_item_ids=[{"a": 1}], payment_method_id=xpm)
    add("exchange_delivered_order_items", order_id=o_ex.order_id, item_ids=[True], new_item_ids=[1], payment_method_id=xpm)
    xi, xv = next((i, other_variant(i, cheaper=False)) for i in o_ex2.items if other_variant(i, cheaper=False))
    eo, ei, ev, eg = too_poor("delivered")
    add("exchange_delivered_order_items", order_id=eo.order_id, item_ids=[ei], new_item_ids=[ev], payment_method_id=eg)
    o_ex4 = take(lambda o: delivered(o) and variants_of(o.items[0])[o.items[0].item_id].available)
    add("exchange_delivered_order_items", order_id=o_ex4.order_id, item_ids=[o_ex4.items[0].item_id], new_item_ids=[o_ex4.items[0].item_id], payment_method_id=o_ex4.payment_history[0].payment_method_id)
    add("exchange_delivered_order_items", order_id=o_ex.order_id, item_ids=[xa.item_id, xb.item_id], new_item_ids=[other_variant(xa), other_variant(xb)], payment_method_id=xpm)
    add("exchange_delivered_order_items", order_id=o_ex.order_id, item_ids=[xa.item_id], new_item_ids=[other_variant(xa)], payment_method_id=xpm)
    add("exchange_delivered_order_items", order_id=o_ex2.order_id, item_ids=[xi.item_id], new_item_ids=[xv], payment_method_id=first_gift_card(user_of(o_ex2)))
    add("exchange_delivered_order_items", order_id=o_ex3.order_id, item_ids=[], new_item_ids=[], payment_method_id=o_ex3.payment_history[0].payment_method_id)
    o_ex5 = take(delivered)
    add("exchange_delivered_order_items", order_id=o_ex5.order_id, item_ids={}, new_item_ids="", payment_method_id=o_ex5.payment_history[0].payment_method_id)

    # ------------------------------------------------------------------ return_delivered_order_items
    o_ret = take(lambda o: delivered(o) and paid_with("credit_card")(o) and user_has("gift_card")(o) and len(o.items) >= 2)
    o_ret2 = take(lambda o: delivered(o) and paid_with("paypal")(o) and user_has("gift_card")(o))
    o_ret3 = take(lambda o: delivered(o) and (user_has("paypal")(o) or user_has("credit_card")(o)) and not paid_with("paypal")(o))
    ru = user_of(o_ret)
    rpm = o_ret.payment_history[0].payment_method_id
    other_cc = next((p for p in ru.payment_methods if p != rpm and not p.startswith("gift_card")), None)
    add("return_delivered_order_items", order_id=o_pay.order_id, item_ids=[], payment_method_id=rpm)
    add("return_delivered_order_items", order_id=o_ret.order_id, item_ids=[o_ret.items[0].item_id], payment_method_id="credit_card_0000000")
    add("return_delivered_order_items", order_id=o_ret.order_id, item_ids=[o_ret.items[0].item_id], payment_method_id={"x": 1})
    if other_cc:
        add("return_delivered_order_items", order_id=o_ret.order_id, item_ids=[o_ret.items[0].item_id], payment_method_id=other_cc)
    ret3_other = next((p for p in user_of(o_ret3).payment_methods if p != o_ret3.payment_history[0].payment_method_id and not p.startswith("gift_card")), None)
    if ret3_other:
        add("return_delivered_order_items", order_id=o_ret3.order_id, item_ids=[o_ret3.items[0].item_id], payment_method_id=ret3_other)
    add("return_delivered_order_items", order_id=o_ret.order_id, item_ids=["0000000000"], payment_method_id=rpm)
    add("return_delivered_order_items", order_id=o_ret.order_id, item_ids=[o_ret.items[0].item_id] * 5, payment_method_id=rpm)
    add("return_delivered_order_items", order_id=o_ret.order_id, item_ids=o_ret.items[0].item_id, payment_method_id=rpm)
    add("return_delivered_order_items", order_id=o_ret.order_id, item_ids=7, payment_method_id=rpm)
    add("return_delivered_order_items", order_id=o_ret.order_id, item_ids=[i.item_id for i in o_ret.items][::-1], payment_method_id=rpm)
    add("return_delivered_order_items", order_id=o_ret.order_id, item_ids=[o_ret.items[0].item_id], payment_method_id=rpm)
    add("return_delivered_order_items", order_id=o_ret2.order_id, item_ids=[o_ret2.items[0].item_id], payment_method_id=first_gift_card(user_of(o_ret2)))
    add("return_delivered_order_items", order_id=o_ret3.order_id, item_ids={}, payment_method_id=o_ret3.payment_history[0].payment_method_id)

    # ------------------------------------------------------------------ calculate
    for e in CALC_HAND:
        add("calculate", expression=e)
    for e in calc_corpus():
        add("calculate", expression=e)
    for e in [5, 1.5, None, True, ["1", "+", "2"], ["1", 2], ["abc"], [], {"1": 2}, {"x": 1}, ["12", "+-*"]]:
        add("calculate", expression=e)
    # The compiler's recursion limit as seen through get_response (it depends on the depth of
    # the Python stack, 3 levels per frame; measured here at the depth the cases run at): the
    # longest chain of unary minus signs that still evaluates, and the next one.
    lo, hi = 1000, 6000
    while lo + 1 < hi:
        mid = (lo + hi) // 2
        probe = message.ToolCall(id="probe", name="calculate", arguments={"expression": "-" * mid + "1"})
        lo, hi = (mid, hi) if not env.get_response(probe).error else (lo, mid)
    for k in (lo, hi):
        add("calculate", expression="-" * k + "1")

    # ------------------------------------------------------------------ run the cases
    results = []
    for i, case in enumerate(cases):
        call = message.ToolCall(id=f"call_{i}", name=case["tool"], arguments=case["arguments"])
        resp = env.get_response(call)
        results.append(
            {
                "tool": case["tool"],
                "arguments": case["arguments"],
                "content": resp.content,
                "error": resp.error,
            }
        )
    final_hash = db_hash(env)

    # ------------------------------------------------------------------ gold actions per task
    tasks = [tasks_model.Task.model_validate(t) for t in raw_tasks]
    gold = []
    for task in tasks:
        genv = make_env()
        errors = 0
        for action in task.evaluation_criteria.actions or []:
            try:
                genv.make_tool_call(tool_name=action.name, requestor=action.requestor, **action.arguments)
            except Exception:
                errors += 1
        gold.append({"task": task.id, "errors": errors, "db_sha256": db_hash(genv)})

    # ------------------------------------------------------------------ the evaluator's db check
    def trajectory(calls):
        scratch = make_env()
        messages = []
        for i, (name, arguments) in enumerate(calls):
            tc = message.ToolCall(id=f"t{i}", name=name, arguments=arguments, requestor="assistant")
            messages.append(message.AssistantMessage(role="assistant", content=None, tool_calls=[tc]))
            resp = scratch.get_response(tc)
            messages.append(message.ToolMessage(id=tc.id, role="tool", content=resp.content, requestor="assistant", error=resp.error))
        return messages

    def plant(arguments):
        """One wrong argument, of the kind an agent gets wrong."""
        out = json.loads(json.dumps(arguments))
        if "reason" in out:
            out["reason"] = "ordered by mistake" if out["reason"] == "no longer needed" else "no longer needed"
        elif "zip" in out:
            out["zip"] = out["zip"][:-1] + ("1" if out["zip"][-1] != "1" else "2")
        elif "new_item_ids" in out and out["new_item_ids"]:
            out["item_ids"] = out["item_ids"][:-1]
            out["new_item_ids"] = out["new_item_ids"][:-1]
        elif "item_ids" in out and len(out["item_ids"]) > 1:
            out["item_ids"] = out["item_ids"][:-1]
        elif "payment_method_id" in out:
            out["payment_method_id"] = out["payment_method_id"] + "0"
        return out

    checks = []
    mutating = {t.name for t in env.get_tools() if env.tools.tool_mutates_state(t.name)}
    chosen = [t for t in tasks if any(a.name in mutating for a in t.evaluation_criteria.actions)][:8]
    for task in chosen:
        actions = [(a.name, a.arguments) for a in task.evaluation_criteria.actions]
        first_mut = next(i for i, (n, _) in enumerate(actions) if n in mutating)
        planted = list(actions)
        planted[first_mut] = (actions[first_mut][0], plant(actions[first_mut][1]))
        reads_only = [(n, a) for n, a in actions if n not in mutating]
        for label, calls in (("gold", actions), ("planted", planted), ("reads_only", reads_only)):
            info = evaluator_env.EnvironmentEvaluator.calculate_reward(
                environment_constructor=make_env,
                task=task,
                full_trajectory=trajectory(calls),
                strict_replay=True,
            )
            checks.append(
                {
                    "task": task.id,
                    "label": label,
                    "calls": [{"name": n, "arguments": a} for n, a in calls],
                    "db_match": info.db_check.db_match,
                }
            )

    tools = [t.openai_schema for t in env.get_tools()]
    out = {
        "source": {
            "repository": "https://github.com/sierra-research/tau2-bench",
            "commit": "a2c0247",
            "version": "1.0.1",
            "python": platform.python_version(),
            "pydantic": pydantic.VERSION,
            "made_by": "scenarios/tau2-retail/golden.py",
        },
        "tools": tools,
        "mutating": sorted(mutating),
        "initial_db_sha256": initial_hash,
        "cases": results,
        "final_db_sha256": final_hash,
        "gold": gold,
        "db_checks": checks,
    }
    text = json.dumps(out, indent=0, ensure_ascii=False) + "\n"
    with open(opts.out, "w", encoding="utf-8") as f:
        f.write(text)
    n_err = sum(g["errors"] for g in gold)
    print(
        f"{opts.out}: {len(results)} cases ({sum(r['error'] for r in results)} errors), "
        f"{len(gold)} tasks ({n_err} gold actions error), {len(checks)} db checks, "
        f"{len(text)} bytes"
    )


CALC_HAND = [
    "2 + 2", "100.5 + 23.99 - 10", "(19.99 + 5) * 2", "2.675", "0.125*1", "1.005 * 1", "1/3",
    "2/3", "10/4", "7 // 2", "-7 // 2", "-7.5 // 2", "7 // -2.0", "1 // 1.5", "5.5 // 0.5",
    "2 ** 10", "2 ** -1", "2 ** 0.5", "(-8) ** (1/3)", "0 ** -1", "0.0 ** -1", "0 ** 0",
    "10.0 ** 400", "10 ** 40", "1.5 ** 1000", "(-2) ** 3", "-2 ** 2", "2 ** -2 ** -1",
    "1/0", "1//0", "1.0/0", "1.0//0", "0.0//0.0", "1 / 0.0", "(1+2j)" , "1e5", "abc", "1,2",
    "", " ", "   1 + 1   ", "1+", "(1", "1)", "1 2", "(1 2)", "(1 + 2 3)", "2(3 4)", "1 2)",
    "(1 2", "1 (2", "01", "00", "0012.5", "1.", ".5", "...", "()", "2(3)", "(1)(2)", "()()",
    "1*()", "()*2", "()*2.0", "()+()", "()+1", "1+()", "-()", "+()", "-...", "...+1", "2(*3)",
    "2(**3)", "2(*())", "(*())", "(**1)", "(*1 2)", "*1", "1..2", ".", "+", "--1", "+-+1",
    "1 .5", "1.(2)", "(1).", "1 * * 2", "1 + + 2", "1***2", "/1", "((1) 2 (3 4))", "((1) 2)",
    "(1) 2 (3 4)", "1 2 (", "(1 2 01)", "2(*3 4)", "9999999999999999", "1.0*10**16",
    "100000000000000000000.0*1000", "99999999999999999999999999999999999999/3", "10**20/7",
    "2**100", "3**80", "2**127", "-(2**126)*2", "123456789*987654321", "0.1+0.2",
    "1234.5678 * 100", "1e400", "9" * 400 + ".0", "(" * 200 + "1" + ")" * 200,
    "(" * 201 + "1" + ")" * 201, "((((", "))))", "(-1) ** 0.5", "(-1) ** 0.5 * 0",
    "1 / ((-1) ** 0.5 * 0)", "((-1) ** 0.5)(1)", "((-1)**0.5)(*1)", "2 ** (-1) ** 0.5",
    "(0 * (-1) ** 0.5) ** -1", "((-8) ** 0.5) ** 2", "((-8) ** 0.5) // 2", "-(-1) ** 0.5",
    "1.0 ** (-1) ** 0.5", "10.0 ** -310", "10.0 ** -400", "(-10.0) ** 309", "0.1 * 3",
    "49.99 * 3 - 10.5", "(129.99 + 45.5) / 2", "1 - 0.9", "1000000 * 1000000 * 1000000 * 1000000",
    "2.5 // 0", "-0.0", "0 * -1.0", "-0.001", "1 // -0.0", "5 // -0.5",
]


def calc_corpus():
    """Generated expressions: plausible arithmetic and random strings of the alphabet."""
    rng = random.Random(20260118)
    out = []

    def number():
        r = rng.random()
        if r < 0.4:
            return str(rng.randint(0, 500))
        if r < 0.8:
            return f"{rng.randint(0, 999)}.{rng.randint(0, 99):02d}"
        if r < 0.9:
            return rng.choice(["0", "00", "0.5", ".25", "3.", "007", "1.50"])
        return str(rng.randint(0, 10**18))

    def expr(depth=0):
        r = rng.random()
        if depth > 3 or r < 0.35:
            return number()
        if r < 0.45:
            return "-" + expr(depth + 1)
        if r < 0.6:
            return "(" + expr(depth + 1) + ")"
        op = rng.choice(["+", "-", "*", "/", "//", "**", " + ", " * ", " / "])
        if op == "**":
            return expr(depth + 1) + "**" + rng.choice(["2", "0.5", "-1", "3", "(1/2)"])
        return expr(depth + 1) + op + expr(depth + 1)

    for _ in range(260):
        out.append(expr())
    alphabet = "0123456789+-*/(). "
    weights = [3] * 10 + [3, 3, 3, 3, 3, 3, 2, 3]
    for _ in range(260):
        n = rng.randint(1, 10)
        out.append("".join(rng.choices(alphabet, weights=weights, k=n)))
    return out


if __name__ == "__main__":
    main()
