/**
 * The `loopctl/anthropic` entry: Anthropic's Messages API as a `ModelProvider` (`anthropicMessages`), through the
 * optional peer dependency `@anthropic-ai/sdk` (loaded only by this entry). See docs/architecture.md, "Providers".
 */
export * from '../model/anthropic/index.js';
