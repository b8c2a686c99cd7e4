/**
 * A failure the user can act on: its message is the one line the step fails with (a human
 * sentence with the fix, then the raw codes to search for). Anything else that is thrown is a bug
 * or an environment problem and is reported with its own message.
 */
export class ActionFailure extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ActionFailure";
  }
}
