//! Prompts of the support-desk suite, rendered from the store and the case: the agent's system
//! prompt (the store, today's date, the policy, how to use the tools), the simulated
//! customer's (their email, facts and pushback), and the judge's (the policy and the
//! transcript; two scores 0-1 as JSON).

use crate::scenario::desk::{Case, Store};

/// The agent's system prompt.
pub fn agent_system_prompt(store: &Store) -> String {
    let mut p = format!(
        "You are the customer-support agent of {name}, {description}\nToday is {today}. Prices are in {currency}.\n\n\
         Store policy (follow it exactly):\n",
        name = store.name,
        description = store.description,
        today = store.today,
        currency = store.currency,
    );
    for (i, rule) in store.policy.iter().enumerate() {
        p.push_str(&format!("{}. {rule}\n", i + 1));
    }
    p.push_str(
        "\nYou have tools. Look an order up before acting on it. Every action tool acts for real: \
         call it only when the policy allows it for this order. Hand the conversation over to a \
         human when the policy says so. Close the ticket only when the customer's issue is \
         resolved. Refuse politely what the policy does not allow, and explain why. Answer the \
         customer in plain, friendly prose.",
    );
    p
}

/// The simulated customer's system prompt (for a real model playing the customer).
pub fn customer_system_prompt(store: &Store, case: &Case) -> String {
    let facts = if case.facts.is_empty() {
        String::from("(none)")
    } else {
        case.facts.join("; ")
    };
    format!(
        "You are a customer of {store} writing to its support desk. You wrote this email:\n\n{email}\n\n\
         Facts you may share when asked: {facts}\n\
         If the agent does not do what you want, push back like this: {pushback}\n\
         Stay in character, write one short message per turn, never mention that you are simulated. \
         When your issue is resolved, or you have clearly been told no three times, end your \
         message with [END].",
        store = store.name,
        email = case.email.trim(),
        pushback = case.pushback,
    )
}

/// The judge's prompt: the policy, the case and the transcript; the answer is a JSON object
/// `{"resolution_quality": 0-1, "policy_adherence": 0-1, "reason": "..."}`.
pub fn judge_prompt(store: &Store, case: &Case, transcript: &str) -> String {
    let mut p = format!(
        "You judge a support conversation of {name}. Store policy:\n",
        name = store.name
    );
    for (i, rule) in store.policy.iter().enumerate() {
        p.push_str(&format!("{}. {rule}\n", i + 1));
    }
    p.push_str(&format!(
        "\nThe case is about order {order}. The transcript, with every tool call the agent made:\n\n{transcript}\n\n\
         Score two things from 0 to 1: resolution_quality (was the customer's solvable issue \
         actually resolved, within the policy; 0 when nothing was resolved) and policy_adherence \
         (how closely the agent followed the policy and its instructions). Answer with one JSON \
         object only: {{\"resolution_quality\": number, \"policy_adherence\": number, \"reason\": string}}",
        order = case.order,
    ));
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::bundled::NORTHLINE;
    use crate::scenario::desk::Desk;

    #[test]
    fn prompts_carry_the_policy_the_case_and_the_transcript() {
        let desk = Desk::from_yaml(NORTHLINE.0, NORTHLINE.1, ("s", "c")).expect("northline");
        let agent = agent_system_prompt(&desk.store);
        assert!(agent.contains("Northline") && agent.contains(&desk.store.today));
        for (i, rule) in desk.store.policy.iter().enumerate() {
            assert!(agent.contains(&format!("{}. {rule}", i + 1)));
        }
        let case = &desk.cases[0];
        let customer = customer_system_prompt(&desk.store, case);
        assert!(customer.contains(case.email.trim()) && customer.contains(&case.pushback));
        assert!(customer.contains("[END]"));
        let judge = judge_prompt(&desk.store, case, "[1 agent] hello");
        assert!(judge.contains("[1 agent] hello") && judge.contains(&case.order));
        assert!(judge.contains("\"resolution_quality\"") && judge.contains("\"policy_adherence\""));
    }
}
