export { Mailbox } from './mailbox.js';
export type { MailboxToken, MailboxOptions } from './mailbox.js';
