// Placeholder post step: the action is built in its own issue.
export {};
